"""`apply_config` / `export_config` and the `apply` / `export` commands against the
database: the documented example applies, re-applies as a no-op, round-trips through
export, and a bad file writes nothing. Secrets never leave sealed storage."""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from audit.models import AdminEvent
from declarative.schema import ConfigError
from gateway.models import ConfigVersion
from management_api.config_apply import apply_config, export_config
from management_api.management.commands.export import render_yaml
from presets.models import Preset
from routing.models import Endpoint, Model, Provider, VirtualModel
from workspaces.models import Policy, ProviderCredential, Workspace
from workspaces.secrets import DecryptionError, Sealed, owner_aad, unseal

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "examples" / "switchyard.yaml"
SECRETS = {"GROQ_API_KEY": "gsk-managed-1", "MISTRAL_API_KEY": "mk-managed-2"} | {
    "ACME_GROQ_KEY": "gsk-acme-byok-3"
}
EXPORTED_SECRETS = {
    "SWITCHYARD_PROVIDER_GROQ_KEY": SECRETS["GROQ_API_KEY"],
    "SWITCHYARD_PROVIDER_MISTRAL_KEY": SECRETS["MISTRAL_API_KEY"],
    "SWITCHYARD_WORKSPACE_ACME_GROQ_KEY": SECRETS["ACME_GROQ_KEY"],
}
TABLES = (Provider, Model, Endpoint, VirtualModel, Workspace, Policy, ProviderCredential, Preset)
TEST_KEYS = {"test1": bytes(range(32))}

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _key_ring(settings: Any) -> None:
    settings.SWITCHYARD_ENCRYPTION_KEYS = TEST_KEYS


def example() -> dict[str, Any]:
    return yaml.safe_load(EXAMPLE.read_text())


def without_secrets(data: dict[str, Any]) -> dict[str, Any]:
    for provider in data["providers"]:
        provider.pop("api_key_env")
    for workspace in data["workspaces"]:
        workspace.pop("credentials")
    return data


def row_counts() -> dict[str, int]:
    return {table.__name__: table.objects.count() for table in (*TABLES, AdminEvent)}


def apply(data: Any, **kwargs: Any) -> Any:
    return apply_config(data, actor="test", environ=kwargs.pop("environ", SECRETS), **kwargs)


def test_documented_example_applies_and_a_second_apply_changes_nothing() -> None:
    # when
    first = apply(example())
    second = apply(example())
    # then
    assert {kind: c["created"] for kind, c in first.as_dict().items()} == {
        "provider": 2, "model": 3, "endpoint": 3, "virtual_model": 3, "workspace": 1,
        "policy": 1, "credential": 1, "preset": 1, "key": 1, "route": 0,
        "budget": 2, "limit": 2,
    }  # fmt: skip
    assert second.changed is False
    assert second.changes == ()
    assert all(c["unchanged"] == first.as_dict()[k]["created"] for k, c in second.as_dict().items())


def test_example_fields_land_in_their_columns() -> None:
    # when
    apply(example())
    # then
    endpoint = Endpoint.objects.get(id="groq--llama-3.3-70b--us-east-1")
    assert (endpoint.provider.slug, endpoint.model.slug) == ("groq", "meta/llama-3.3-70b")
    assert (endpoint.price_input, endpoint.price_output) == (Decimal("0.59"), Decimal("0.79"))
    assert endpoint.timeouts == {
        "connect_ms": 3000, "ttft_ms": 60000, "idle_ms": 60000, "total_ms": 600000,
    }  # fmt: skip
    policy = Policy.objects.get(workspace__slug="acme")
    assert (policy.max_price_prompt, policy.max_price_completion) == (Decimal(5), Decimal(15))
    assert policy.daily_budget_micros == 50_000_000
    assert policy.cooldown == {"base_s": 30, "max_s": 300}
    credential = ProviderCredential.objects.get(workspace__slug="acme", provider_slug="groq")
    assert (credential.allowed_models, credential.managed_fallback) == ([], False)
    assert Workspace.objects.get(slug="acme").smart_routing["aliases"]["normal"]["hard"] == (
        "normal-hard"
    )
    assert VirtualModel.objects.get(slug="normal-easy").targets == [
        {"model": "mistral/mistral-small", "weight": 1}
    ]


def test_changed_field_is_updated_and_reported_by_name() -> None:
    # given
    apply(example())
    data = example()
    data["endpoints"][1]["price"]["output"] = 6.5
    # when
    report = apply(data)
    # then
    assert report.changes == ("updated endpoint mistral--mistral-large--eu-west-1: price_output",)
    assert report.counts["endpoint"].updated == 1
    assert Endpoint.objects.get(id="mistral--mistral-large--eu-west-1").price_output == Decimal(
        "6.5"
    )


def test_export_then_apply_is_a_no_op_without_secrets() -> None:
    # given
    apply(without_secrets(example()), environ={})
    exported = yaml.safe_load(render_yaml(export_config()))
    # when
    report = apply(exported, environ={})
    # then
    assert report.changed is False
    assert list(exported) == ["providers", "models", "endpoints", "virtual_models", "workspaces"]
    assert "api_key_env" not in json.dumps(exported)


def test_export_then_apply_is_a_no_op_when_the_suggested_variables_hold_the_keys() -> None:
    # given
    apply(example())
    exported = yaml.safe_load(render_yaml(export_config()))
    # when
    report = apply(exported, environ=EXPORTED_SECRETS)
    # then
    assert report.changed is False


def test_export_never_contains_a_secret() -> None:
    # given
    apply(example())
    # when
    text = render_yaml(export_config())
    # then
    assert not any(secret in text for secret in SECRETS.values())
    assert "api_key_env: SWITCHYARD_PROVIDER_GROQ_KEY" in text
    assert "#   SWITCHYARD_WORKSPACE_ACME_GROQ_KEY" in text


def test_admin_event_records_the_counts_and_never_a_secret() -> None:
    # when
    apply(example(), target="switchyard.yaml")
    # then
    event = AdminEvent.objects.get(workspace=None)  # the run's; acme has its own (R-OBS-4)
    assert (event.actor, event.action, event.target) == ("test", "config.apply", "switchyard.yaml")
    assert event.changes["counts"]["endpoint"] == {"created": 3, "updated": 0, "unchanged": 0}
    stored = json.dumps([e.changes for e in AdminEvent.objects.all()])
    assert not any(secret in stored for secret in SECRETS.values())


def test_byok_key_decrypts_only_for_its_own_workspace_and_provider() -> None:
    # given
    apply(example())
    row = ProviderCredential.objects.get(workspace__slug="acme", provider_slug="groq")
    sealed = Sealed(bytes(row.ciphertext), bytes(row.nonce), row.key_id)
    # when
    plaintext = unseal(sealed, owner_aad("acme", "groq"), TEST_KEYS)
    # then
    assert plaintext == SECRETS["ACME_GROQ_KEY"]
    for workspace, provider in [("other", "groq"), ("acme", "mistral"), (None, "groq")]:
        with pytest.raises(DecryptionError):
            unseal(sealed, owner_aad(workspace, provider), TEST_KEYS)


def test_managed_key_is_sealed_for_the_installation() -> None:
    # when
    apply(example())
    # then
    row = Provider.objects.get(slug="mistral")
    sealed = Sealed(bytes(row.credential_ciphertext), bytes(row.credential_nonce), "test1")
    assert unseal(sealed, owner_aad(None, "mistral"), TEST_KEYS) == SECRETS["MISTRAL_API_KEY"]


def test_same_secret_keeps_its_ciphertext_and_a_new_one_is_resealed() -> None:
    # given
    apply(example())
    before = bytes(ProviderCredential.objects.get().ciphertext)
    # when
    unchanged = apply(example())
    rotated = apply(example(), environ=SECRETS | {"ACME_GROQ_KEY": "gsk-acme-new"})
    # then
    assert unchanged.changed is False
    assert rotated.changes == ("updated credential acme/groq: api_key",)
    row = ProviderCredential.objects.get()
    assert bytes(row.ciphertext) != before
    sealed = Sealed(bytes(row.ciphertext), bytes(row.nonce), row.key_id)
    assert unseal(sealed, owner_aad("acme", "groq"), TEST_KEYS) == "gsk-acme-new"


def test_absent_nested_sections_are_left_as_stored() -> None:
    # given
    apply(example())
    # when
    report = apply({"workspaces": [{"slug": "acme", "name": "ACME"}]}, environ={})
    # then
    assert report.changed is False
    assert Policy.objects.get().daily_budget_micros == 50_000_000
    assert ProviderCredential.objects.count() == 1


def _set(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(data: dict[str, Any]) -> None:
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


@pytest.mark.parametrize(
    ("_case", "mutate", "expected"),
    [
        ("negative price", _set(("endpoints", 2, "price", "input"), -1),
         "endpoints[2].price.input: must be ≥ 0"),
        ("unknown key", _set(("models", 0, "colour"), "red"), "models[0].colour: unknown key"),
        ("bad enum", _set(("endpoints", 0, "status"), "paused"),
         "endpoints[0].status: must be one of active, degraded, disabled, catalog_only "
         "(got 'paused')"),
        ("dangling provider", _set(("endpoints", 1, "provider"), "mistal"),
         "endpoints[1].provider: unknown provider 'mistal' (not in this file or the database)"),
        ("dangling target", _set(("virtual_models", 0, "targets", 1, "model"), "mistral/large"),
         "virtual_models[0].targets[1].model: unknown model or virtual model 'mistral/large' "
         "(not in this file or the database)"),
        ("bad timeout", _set(("workspaces", 0, "policy", "timeouts", "ttft_ms"), -5),
         "workspaces[0].policy.timeouts.ttft_ms: must be ≥ 1"),
        ("bad retention", _set(("workspaces", 0, "policy", "retention"), "1w"),
         "workspaces[0].policy.retention: '1w' is not a duration like 30d or 12h"),
        ("bad model slug", _set(("models", 2, "slug"), "mistral-small"),
         "models[2].slug: 'mistral-small' is not vendor/name (SPEC D-11)"),
    ],
)  # fmt: skip
def test_bad_field_reports_its_path_and_writes_nothing(_case: str, mutate, expected: str) -> None:
    # given
    data = example()
    mutate(data)
    before = row_counts()
    # when
    with pytest.raises(ConfigError) as caught:
        apply(data)
    # then
    assert expected in caught.value.errors
    assert row_counts() == before == dict.fromkeys(before, 0)


def test_missing_api_key_env_is_an_error_and_writes_nothing() -> None:
    # given
    environ = {k: v for k, v in SECRETS.items() if k != "ACME_GROQ_KEY"}
    # when
    with pytest.raises(ConfigError) as caught:
        apply(example(), environ=environ)
    # then
    assert caught.value.errors == (
        "workspaces[0].credentials[0].api_key_env: environment variable ACME_GROQ_KEY is not set",
    )
    assert set(row_counts().values()) == {0}


def test_dry_run_reports_changes_and_writes_nothing(django_capture_on_commit_callbacks) -> None:
    # when
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        report = apply(example(), dry_run=True)
    # then
    assert report.dry_run is True
    assert report.counts["endpoint"].created == 3
    assert set(row_counts().values()) == {0}
    assert callbacks == []


def test_apply_bumps_the_snapshot_version_on_commit(django_capture_on_commit_callbacks) -> None:
    # when
    with django_capture_on_commit_callbacks(execute=True):
        apply(example())
    # then
    assert ConfigVersion.objects.get(pk=1).version > 0


def test_apply_command_prints_the_report(monkeypatch: pytest.MonkeyPatch) -> None:
    # given
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    out = io.StringIO()
    # when
    call_command("apply", "-f", str(EXAMPLE), stdout=out)
    # then
    assert "created endpoint groq--llama-3.3-70b--us-east-1" in out.getvalue()
    assert set(AdminEvent.objects.values_list("target", flat=True)) == {"switchyard.yaml"}


def test_apply_command_prints_every_error_and_fails(tmp_path: Path) -> None:
    # given
    path = tmp_path / "bad.yaml"
    path.write_text("models:\n  - slug: llama\n    version: 3.3\nextra: 1\n")
    err = io.StringIO()
    # when
    with pytest.raises(CommandError) as caught:
        call_command("apply", "-f", str(path), stderr=err)
    # then
    assert err.getvalue().splitlines() == [
        "extra: unknown key",
        "models[0].slug: 'llama' is not vendor/name (SPEC D-11)",
        'models[0].version: must be a string (quote it: "3.3")',
    ]
    assert caught.value.returncode == 1
    assert set(row_counts().values()) == {0}


def test_apply_command_reports_yaml_syntax_errors_with_line_and_column(tmp_path: Path) -> None:
    # given
    path = tmp_path / "broken.yaml"
    path.write_text("providers:\n  - slug: groq\n    name: [Groq\n")
    err = io.StringIO()
    # when
    with pytest.raises(CommandError):
        call_command("apply", "-f", str(path), stderr=err)
    # then
    assert err.getvalue().strip() == (
        f"{path}:4:1: expected ',' or ']', but got '<stream end>' "
        "(while parsing a flow sequence at line 3, column 11)"
    )


def test_export_command_limits_to_one_workspace() -> None:
    # given
    apply(example())
    apply({"workspaces": [{"slug": "other"}]}, environ={})
    out = io.StringIO()
    # when
    call_command("export", "--workspace", "acme", stdout=out)
    # then
    document = yaml.safe_load(out.getvalue())
    assert list(document) == ["workspaces"]
    assert [w["slug"] for w in document["workspaces"]] == ["acme"]


def test_export_of_an_unknown_workspace_fails() -> None:
    # when / then
    with pytest.raises(CommandError, match="no workspace 'nope'"):
        call_command("export", "--workspace", "nope", stdout=io.StringIO())


def test_documented_example_is_not_modified_by_parsing() -> None:
    # given
    data = example()
    original = copy.deepcopy(data)
    # when
    apply(data)
    # then
    assert data == original
