"""The policy editor's form, both ways (SPEC R-POL-1): a stored policy's `policy:` section
(management_api/config_export.py) to the form's fields, and a posted form back to that section.

The form holds text; turning it back into the section is all this does. Checking it is
left to the one validator `apply` uses (declarative/), so the console accepts and
refuses exactly what a config file would, with the same messages. A number that does not
parse stays text, for that validator to name. Pure: no database."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from console.workspace_config import comma_list, form_number

RESIDENCY = ("eu-owned", "eu-hosted", "any")
MODES = ("balanced", "price", "latency", "throughput")
LISTS = (
    "allowed_regions",
    "provider_allow",
    "provider_deny",
    "model_allow",
    "model_deny",
    "data_classes",
)
TIMEOUTS = ("connect_ms", "ttft_ms", "idle_ms", "total_ms")
COOLDOWN = ("base_s", "max_s")


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    label: str
    help: str


# Every R-POL-1 field, in the form's order, with the inline help the page shows.
FIELDS = (
    Field(
        "allowed_residency",
        "Residency",
        "Sovereignty classes requests may go to; eu-hosted "
        "includes eu-owned, none ticked means any. Never relaxed by a request.",
    ),
    Field("allowed_regions", "Regions", "Comma-separated regions (eu-west-1, …); empty: any."),
    Field("provider_allow", "Providers allowed", "Only these providers; empty: all."),
    Field("provider_deny", "Providers denied", "Never these providers."),
    Field("model_allow", "Models allowed", "Only these models; empty: all."),
    Field("model_deny", "Models denied", "Never these models."),
    Field("partners", "Partner endpoints", "Allow endpoints served through partners."),
    Field("max_price", "Price caps", "USD per 1M tokens, input and output; empty: no cap."),
    Field("data_classes", "Data classes", "Allowed classes; the first is a request's default."),
    Field("retention", "Trace retention", "How long traces are kept: 30d, 12h; 0d keeps none."),
    Field("daily_budget", "Daily budget", "USD a day for the whole workspace; empty: none."),
    Field("routing_mode", "Routing mode", "What the ranking weighs most, unless a request asks."),
    Field("max_attempts", "Attempts", "Upstream attempts per request at most."),
    Field("timeouts", "Timeouts", "Milliseconds; empty: the endpoint's, then the gateway's."),
    Field("cooldown", "Cooldown", "Seconds an endpoint rests after failing; max ≥ base."),
)


def form_values(document: Mapping[str, Any]) -> dict[str, Any]:
    """A `policy:` section as the form's initial values."""
    caps = document.get("max_price") or {}
    values: dict[str, Any] = {name: ", ".join(document.get(name) or []) for name in LISTS}
    values.update(
        allowed_residency=list(document.get("allowed_residency") or []),
        partners=bool(document.get("partners")),
        max_price_prompt=_text(caps.get("prompt")),
        max_price_completion=_text(caps.get("completion")),
        retention=document.get("retention") or "",
        daily_budget=_text(document.get("daily_budget")),
        routing_mode=document.get("routing_mode") or "balanced",
        max_attempts=_text(document.get("max_attempts")),
    )
    for group, names in (("timeouts", TIMEOUTS), ("cooldown", COOLDOWN)):
        for name in names:
            values[f"{group}_{name}"] = _text((document.get(group) or {}).get(name))
    return values


def document_of(get: Callable[[str], str], get_list: Callable[[str], list[str]]) -> dict[str, Any]:
    """A posted form (`get`/`get_list` of its QueryDict) as a `policy:` section."""
    doc: dict[str, Any] = {name: comma_list(get(name)) for name in LISTS}
    doc["allowed_residency"] = [r for r in get_list("allowed_residency") if r]
    doc["partners"] = get("partners") in ("on", "true", "1")
    caps = {side: form_number(get(f"max_price_{side}")) for side in ("prompt", "completion")}
    if any(value is not None for value in caps.values()):
        doc["max_price"] = {side: value for side, value in caps.items() if value is not None}
    for name in ("daily_budget", "max_attempts"):
        if (value := form_number(get(name))) is not None:
            doc[name] = value
    if get("retention").strip():
        doc["retention"] = get("retention").strip()
    doc["routing_mode"] = get("routing_mode").strip() or "balanced"
    for group, names in (("timeouts", TIMEOUTS), ("cooldown", COOLDOWN)):
        numbers = {name: form_number(get(f"{group}_{name}")) for name in names}
        doc[group] = {name: value for name, value in numbers.items() if value is not None}
    return doc


def _text(value: Any) -> str:
    return "" if value is None else str(value)
