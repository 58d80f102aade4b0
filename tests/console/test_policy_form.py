"""The policy editor's pure parts: the form round-trips every field of a `policy:` section
(console/policy_form.py), and the preview says what the engine's filter leaves of the
catalog (console/policy_preview.py, SPEC R-POL-1)."""

from __future__ import annotations

from typing import Any

from django.http import QueryDict

from console.policy_form import document_of, form_values
from console.policy_preview import preview
from routing.engine.types import EndpointInfo, PolicyView

FULL: dict[str, Any] = {
    "allowed_residency": ["eu-owned", "eu-hosted"], "allowed_regions": ["eu-west-1"],
    "provider_allow": ["a", "b"], "provider_deny": ["c"], "model_allow": ["m/x"],
    "model_deny": ["m/y"], "partners": True, "max_price": {"prompt": 2.5, "completion": 10},
    "retention": "7d", "data_classes": ["internal", "pii"], "daily_budget": 12.5,
    "routing_mode": "price", "max_attempts": 2,
    "timeouts": {"connect_ms": 500, "ttft_ms": 4000, "idle_ms": 9000, "total_ms": 60000},
    "cooldown": {"base_s": 5, "max_s": 60},
}  # fmt: skip


def _posted(values: dict[str, Any]) -> dict[str, Any]:
    """`values` as a browser posts the form: text fields, ticked boxes only."""
    form = QueryDict(mutable=True)
    for name, value in values.items():
        if isinstance(value, list):
            form.setlist(name, value)
        elif value is True:
            form[name] = "on"
        elif value is not False:
            form[name] = str(value)
    return document_of(lambda name: form.get(name, ""), form.getlist)


def test_every_field_survives_the_form():
    assert _posted(form_values(FULL)) == FULL


def test_empty_fields_mean_the_defaults_and_bad_numbers_stay_text_for_the_validator():
    posted = _posted({"max_attempts": "three", "max_price_prompt": "", "retention": " "})
    assert posted["max_attempts"] == "three"
    assert "max_price" not in posted
    assert "retention" not in posted
    assert posted["routing_mode"] == "balanced"
    assert (posted["timeouts"], posted["cooldown"], posted["partners"]) == ({}, {}, False)


def _endpoint(eid: str, provider: str, model: str, residency: str) -> EndpointInfo:
    return EndpointInfo(id=eid, provider=provider, model=model, upstream_model=model,
                        region="eu-west-1", status="active", sovereignty_class=residency,
                        partner=False, price_input=1.0, price_output=2.0,
                        capabilities=frozenset({"text"}), context_window=8192)  # fmt: skip


CATALOG = {
    "m/x": (_endpoint("owned", "a", "m/x", "eu-owned"), _endpoint("us", "b", "m/x", "any"),
            _endpoint("denied", "c", "m/x", "eu-owned")),
    "m/y": (_endpoint("y", "a", "m/y", "eu-owned"),),
}  # fmt: skip


def test_the_preview_keeps_what_the_engine_keeps_and_names_each_reason():
    policy = PolicyView(allowed_residency=frozenset({"eu-owned"}),
                        provider_deny=frozenset({"c"}))  # fmt: skip
    x, y = preview(policy, CATALOG)
    assert x.kept == ("owned",)
    assert x.excluded == (("us", "sovereignty_not_allowed"), ("denied", "provider_denied"))
    assert x.sentence == "1 of 3 endpoints of m/x remain: owned"
    assert (y.kept, y.total) == (("y",), 1)


def test_no_policy_keeps_everything():
    assert all(not m.excluded for m in preview(PolicyView(), CATALOG))
