"""The `keys:` section of `manage.py apply` (SPEC R-KEY-1, D-24): validated with paths,
stored per key name, exported back, and read into the snapshot with the key's scope."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from declarative.schema import ConfigError, Existing, parse_config
from gateway.state.snapshot import load_snapshot
from management_api.config_apply import apply_config, export_config, vocabulary
from presets.models import KeySettings
from routing.engine.policy import NOTHING
from workspaces.models import Workspace
from workspaces.services import create_api_key

UTC = datetime.UTC


def workspace(**fields: Any) -> dict[str, Any]:
    return {"workspaces": [{"slug": "acme", **fields}]}


def errors_of(data: Any, **kwargs: Any) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(data, vocabulary=vocabulary(), **kwargs)
    return list(caught.value.errors)


def test_d_24_every_problem_of_a_key_entry_is_reported_with_its_path() -> None:
    # when
    errors = errors_of(
        workspace(keys=[
            {"name": "bot", "preset": "nope", "routes": ["missing"], "expires_at": "soon"},
            {"name": "bot", "limits": {"requests_per_minute": 0},
             "budget": {"period": "hourly", "usd": 5, "alerts": [1.5]}},
        ])
    )  # fmt: skip
    # then
    assert errors == [
        "workspaces[0].keys[0].preset: unknown preset 'nope' (not in this workspace)",
        "workspaces[0].keys[0].routes[0]: unknown route 'missing' (not in this workspace)",
        "workspaces[0].keys[0].expires_at: 'soon' is not a date (2027-06-30) or ISO datetime",
        "workspaces[0].keys[1].budget.period: must be one of daily, weekly, monthly (got 'hourly')",
        "workspaces[0].keys[1].budget.alerts[0]: must be a fraction of the budget in (0, 1], "
        "such as 0.8",
        "workspaces[0].keys[1].limits.requests_per_minute: must be ≥ 1",
        "workspaces[0].keys[1].name: duplicate of workspaces[0].keys[0].name",
    ]


def test_d_24_a_preset_stored_earlier_may_be_named() -> None:
    # when
    config = parse_config(
        workspace(keys=[{"name": "bot", "preset": "support"}]),
        vocabulary=vocabulary(),
        existing=Existing(presets={"acme": frozenset({"support"})}),
    )
    # then
    assert config.workspaces[0].keys[0].preset == "support"


@pytest.mark.parametrize(
    ("written", "stored"),
    [
        (datetime.date(2027, 6, 30), datetime.datetime(2027, 7, 1, tzinfo=UTC)),
        ("2027-06-30", datetime.datetime(2027, 7, 1, tzinfo=UTC)),
        ("2027-06-30T12:00:00+02:00", datetime.datetime(2027, 6, 30, 10, tzinfo=UTC)),
        (datetime.datetime(2027, 6, 30, 12), datetime.datetime(2027, 6, 30, 12, tzinfo=UTC)),  # noqa: DTZ001
    ],
)
def test_d_24_expires_at_is_a_date_meaning_its_end_or_a_datetime(written, stored) -> None:
    config = parse_config(workspace(keys=[{"name": "k", "expires_at": written}]),
                          vocabulary=vocabulary())  # fmt: skip
    assert config.workspaces[0].keys[0].expires_at == stored


@pytest.mark.django_db
def test_d_24_settings_are_stored_by_name_and_exported_back() -> None:
    # given
    data = workspace(
        presets=[{"slug": "support", "allowed_models": ["meta/*"]}],
        keys=[{"name": "bot", "preset": "support", "allowed_models": ["meta/*"],
               "expires_at": datetime.date(2027, 6, 30)}],
    )  # fmt: skip
    # when
    first = apply_config(data, actor="test")
    second = apply_config(data, actor="test")
    # then
    row = KeySettings.objects.get(workspace__slug="acme", name="bot")
    assert (row.preset.slug, row.allowed_models, row.routes) == ("support", ["meta/*"], [])
    assert row.expires_at == datetime.datetime(2027, 7, 1, tzinfo=UTC)
    assert first.as_dict()["key"]["created"] == 1
    assert second.changed is False
    exported = export_config(workspace="acme")["workspaces"][0]["keys"]
    assert exported == [
        {"name": "bot", "expires_at": "2027-07-01T00:00:00+00:00",
         "allowed_models": ["meta/*"], "preset": "support", "routes": []},
    ]  # fmt: skip
    # and the export applies back unchanged
    assert apply_config(export_config(workspace="acme"), actor="test").changed is False


@pytest.mark.django_db
def test_r_key_1_the_snapshot_gives_a_named_key_its_scope() -> None:
    # given settings written before the key exists, then the key
    apply_config(
        workspace(
            policy={"provider_allow": ["groq", "mistral"]},
            presets=[{"slug": "support", "provider_allow": ["mistral"], "default_prompt": "Hi"}],
            keys=[{"name": "bot", "preset": "support", "allowed_models": ["x/*"],
                   "expires_at": "2020-01-01"}],
        ),
        actor="test",
    )  # fmt: skip
    acme = Workspace.objects.get(slug="acme")
    bot = create_api_key(acme, name="bot", actor="test").api_key
    plain = create_api_key(acme, name="plain", actor="test").api_key
    # when
    snap = load_snapshot()
    # then the named key has its scope; the other keeps the workspace's policy
    entry = snap.keys[bot.lookup_id]
    assert entry.preset is not None
    assert entry.preset.default_prompt == "Hi"
    assert entry.allowed == frozenset()  # no catalog model matches x/*
    assert entry.policy is not None
    assert (entry.policy.provider_allow, entry.policy.model_allow) == ({"mistral"}, NOTHING)
    assert entry.expires_at == datetime.datetime(2020, 1, 2, tzinfo=UTC).timestamp()
    other = snap.keys[plain.lookup_id]
    assert (other.preset, other.allowed, other.policy) == (None, None, None)
