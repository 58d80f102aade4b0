"""What an admin event may hold (SPEC R-OBS-4, audit/events.py), without a database: the
before/after of only the fields that changed, created and deleted rows in their shapes,
every value JSON can store, and never a secret — only the marker `[secret]`."""

from __future__ import annotations

import enum
import json
import string
import uuid
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from audit.events import SECRET, diff, event_changes, is_secret_name

WHEN = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)


class Colour(enum.Enum):
    RED = "red"


def test_r_obs_4_only_the_fields_that_changed_are_listed():
    # given
    before = {"name": "ci", "expires_at": None, "allowed_models": ["meta/*"]}
    after = {"name": "ci-2", "expires_at": None, "allowed_models": ["meta/*"]}
    # when
    changes = diff(before, after)
    # then
    assert changes == {"name": {"before": "ci", "after": "ci-2"}}


def test_r_obs_4_nothing_changed_is_no_change():
    assert diff({"role": "viewer"}, {"role": "viewer"}) == {}


def test_r_obs_4_a_created_row_lists_each_field_it_was_given_from_none():
    # when
    changes = diff(None, {"key_name": "", "period": "daily", "limit_micros": 5, "concurrent": None})
    # then
    assert changes == {
        "key_name": {"before": None, "after": ""},
        "period": {"before": None, "after": "daily"},
        "limit_micros": {"before": None, "after": 5},
    }


def test_r_obs_4_a_deleted_row_lists_each_field_it_had_to_none():
    # when
    changes = diff({"period": "weekly", "alerts": [], "concurrent": None}, None)
    # then
    assert changes == {
        "period": {"before": "weekly", "after": None},
        "alerts": {"before": [], "after": None},
    }


def test_r_obs_4_a_field_missing_on_one_side_is_none_there():
    assert diff({"a": 1}, {"b": 2}) == {
        "a": {"before": 1, "after": None},
        "b": {"before": None, "after": 2},
    }


@pytest.mark.parametrize(
    "name",
    ["api_key", "secret", "secret_hmac", "ciphertext", "credential_ciphertext", "plaintext",
     "management_token", "token", "access_token", "password", "key_material", "client_secret",
     "API_KEY", "key_hash"],
)  # fmt: skip
def test_r_obs_4_a_secret_named_field_shows_the_marker_never_the_value(name):
    # when
    changes = diff({name: "sk-old-value"}, {name: "sk-new-value"})
    # then the change is recorded, its values are not
    assert changes == {name: {"before": SECRET, "after": SECRET}}


@pytest.mark.parametrize(
    "name", ["tokens_per_minute", "max_tokens", "api_keys", "name", "key_name", "provider_slug"]
)
def test_r_obs_4_fields_that_only_sound_like_secrets_are_shown(name):
    assert diff({name: 1}, {name: 2}) == {name: {"before": 1, "after": 2}}


def test_r_obs_4_a_secret_set_replaced_or_removed_keeps_none_on_the_empty_side():
    assert diff(None, {"api_key": b"\x01cipher"}) == {"api_key": {"before": None, "after": SECRET}}
    assert diff({"secret": b"\x01"}, None) == {"secret": {"before": SECRET, "after": None}}


def test_r_obs_4_binary_values_are_key_material_whatever_the_field_is_called():
    assert diff({"nonce": b"\x00\x01"}, {"nonce": b"\x02\x03"}) == {
        "nonce": {"before": SECRET, "after": SECRET}
    }


def test_r_obs_4_a_secret_inside_a_mapping_is_hidden_and_its_neighbours_kept():
    # when
    changes = diff(None, {"upstream": {"base_url": "https://x.example", "api_key": "sk-live-1"}})
    # then
    assert changes == {
        "upstream": {"before": None, "after": {"base_url": "https://x.example", "api_key": SECRET}}
    }


def test_r_obs_4_values_are_json_safe():
    # given
    before: dict[str, Any] = {}
    after = {
        "at": WHEN, "day": date(2026, 12, 1), "price": Decimal("0.59"), "id": uuid.UUID(int=1),
        "pair": ("a", "b"), "tags": {"b", "a"}, "colour": Colour.RED, "ratio": float("inf"),
    }  # fmt: skip
    # when
    changes = diff(before, after)
    # then
    assert {field: change["after"] for field, change in changes.items()} == {
        "at": "2026-12-01T09:30:00+00:00", "day": "2026-12-01", "price": "0.59",
        "id": "00000000-0000-0000-0000-000000000001", "pair": ["a", "b"], "tags": ["a", "b"],
        "colour": "red", "ratio": "inf",
    }  # fmt: skip
    json.dumps(changes, allow_nan=False)


def test_r_obs_4_the_same_instant_elsewhere_or_a_tuple_of_the_list_is_no_change():
    # given
    paris = WHEN.astimezone(timezone(timedelta(hours=1)))
    # when
    changes = diff({"expires_at": WHEN, "routes": ["a"]}, {"expires_at": paris, "routes": ("a",)})
    # then
    assert changes == {}


def test_r_obs_4_extra_entries_sit_beside_the_fields_redacted_alike():
    # when
    changes = event_changes(
        {"deployed_version": 1},
        {"deployed_version": 2},
        extra={"diff": ["~ nodes.pick.model: a → b"], "numbers": {"token": "sk-x", "p99_ms": 9}},
    )
    # then
    assert changes == {
        "deployed_version": {"before": 1, "after": 2},
        "diff": ["~ nodes.pick.model: a → b"],
        "numbers": {"token": SECRET, "p99_ms": 9},
    }


def test_r_obs_4_per_object_diffs_in_extra_keep_their_shape():
    # given an apply's object list, already a diff
    created = diff(None, {"managed_fallback": False, "api_key": b"\x01"})
    objects = [{"kind": "credential", "name": "acme/groq", "changes": created}]
    # when
    changes = event_changes(None, None, extra={"objects": objects})
    # then
    assert changes["objects"][0]["changes"] == {
        "managed_fallback": {"before": None, "after": False},
        "api_key": {"before": None, "after": SECRET},
    }


def test_r_obs_4_an_extra_entry_may_not_hide_a_changed_field():
    with pytest.raises(ValueError, match="'version'"):
        event_changes({"version": 1}, {"version": 2}, extra={"version": "two"})


# Properties -----------------------------------------------------------------------------
#
# Secret values all start with `sk-`; no other generated text can contain a `-`, so any
# `sk-` in an event is a secret that leaked.

SECRET_NAMES = st.sampled_from(
    ["api_key", "secret", "secret_hmac", "ciphertext", "credential_ciphertext",
     "management_token", "token", "password", "key_material", "client_secret", "plaintext"]
)  # fmt: skip
PLAIN_NAMES = st.sampled_from(
    ["name", "role", "tokens_per_minute", "api_keys", "allowed_models", "limit_micros", "v"]
)
SECRET_TEXT = st.text(string.ascii_letters + string.digits, min_size=1, max_size=12).map(
    lambda text: f"sk-{text}"
)
SECRET_VALUES = st.one_of(
    st.none(),
    SECRET_TEXT,
    SECRET_TEXT.map(str.encode),
    st.lists(SECRET_TEXT, max_size=2),
    st.dictionaries(st.sampled_from(["value", "before", "after"]), SECRET_TEXT, max_size=2),
)
PLAIN_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(string.ascii_lowercase + " ", max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(PLAIN_NAMES, inner, max_size=3)
        | st.dictionaries(SECRET_NAMES, SECRET_VALUES, min_size=1, max_size=2)
    ),
    max_leaves=8,
)


@st.composite
def rows(draw: st.DrawFn) -> dict[str, Any] | None:
    if draw(st.booleans()) and draw(st.booleans()):
        return None  # created or deleted
    values = {name: draw(SECRET_VALUES) for name in draw(st.sets(SECRET_NAMES, max_size=3))}
    values.update({name: draw(PLAIN_VALUES) for name in draw(st.sets(PLAIN_NAMES, max_size=3))})
    return values


@given(before=rows(), after=rows(), extra=rows())
def test_r_obs_4_no_value_of_a_secret_named_field_ever_appears(before, after, extra):
    # given extra entries (never named like a changed field)
    changed = diff(before, after)
    extra = {name: value for name, value in (extra or {}).items() if name not in changed}
    # when
    changes = event_changes(before, after, extra)
    # then
    assert "sk-" not in json.dumps(changes, ensure_ascii=False, allow_nan=False)


@given(before=rows(), after=rows())
def test_r_obs_4_exactly_the_fields_whose_values_differ_are_listed(before, after):
    # given
    old, new = before or {}, after or {}
    # when
    changes = diff(before, after)
    # then
    assert set(changes) == {field for field in {*old, *new} if old.get(field) != new.get(field)}
    if before is None:
        assert all(change["before"] is None for change in changes.values())
    if after is None:
        assert all(change["after"] is None for change in changes.values())


@given(name=st.text(max_size=20))
def test_r_obs_4_a_name_with_secret_in_it_is_always_secret(name):
    assert is_secret_name(f"{name}secret{name}")
