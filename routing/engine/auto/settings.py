"""The auto router's workspace settings (SPEC R-AUTO-1): objective, spend profile, allowed
model patterns, whether to fall back to the next-ranked models, and the optional LLM
classifier (R-AUTO-2). A request cannot change
them. They narrow the workspace policy before `decide` runs, so an excluded model shows up
in the decision with an ordinary filter reason (`price_above_cap`, `model_not_allowed`).

This module is the one definition of the stored `auto_router` shape: its keys, allowed
values, limits and defaults. `manage.py apply` (declarative/workspaces.py) validates a
file against these constants, and `auto_settings` reads what was stored. Pure."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

# Re-exported: the scorer's objectives are the ones a workspace may configure.
from routing.engine.fit import OBJECTIVES as OBJECTIVES
from routing.engine.types import EndpointInfo, PolicyView

AUTO_ROUTER_KEYS = ("objective", "spend_profile", "allowed_models", "fallback", "classifier")
CLASSIFIER_KEYS = ("model", "timeout_ms")
SPEND_CAP_KEYS = ("input", "output")  # a custom spend profile, USD per 1M tokens
# USD per 1M tokens (input, output); `any` has no cap (R-AUTO-1).
SPEND_PROFILES: dict[str, tuple[float | None, float | None]] = {
    "economy": (0.10, 0.50),
    "standard": (0.30, 1.50),
    "premium": (1.0, 5.0),
    "any": (None, None),
}
DEFAULT_SPEND_PROFILE = "any"
DEFAULT_OBJECTIVE = "balanced"  # one of OBJECTIVES, the scorer's (routing/engine/fit.py)
DEFAULT_FALLBACK = True
DEFAULT_CLASSIFIER_TIMEOUT_MS = 1500
CLASSIFIER_TIMEOUT_MAX_MS = 30_000  # the classifier delays the request it classifies


@dataclass(frozen=True, slots=True)
class AutoSettings:
    objective: str = DEFAULT_OBJECTIVE
    max_input: float | None = None  # spend-profile caps, USD per 1M tokens
    max_output: float | None = None
    patterns: tuple[str, ...] = ()  # `anthropic/*`, `openai/gpt-5.*`, exact ids; empty = all
    fallback: bool = DEFAULT_FALLBACK  # try the next-ranked models after a retryable failure
    classifier_model: str | None = None  # the LLM classifier's model (R-AUTO-2); None = local
    classifier_timeout_s: float = DEFAULT_CLASSIFIER_TIMEOUT_MS / 1000.0


def auto_settings(raw: Mapping[str, Any]) -> AutoSettings:
    """From Workspace.auto_router as stored (validated by `manage.py apply`), with the
    defaults above for absent keys; an unknown objective or profile name reads as the
    default, an absent or zero classifier timeout as DEFAULT_CLASSIFIER_TIMEOUT_MS."""
    profile = raw.get("spend_profile", DEFAULT_SPEND_PROFILE)
    if isinstance(profile, Mapping):
        max_input, max_output = profile.get("input"), profile.get("output")
    else:
        max_input, max_output = SPEND_PROFILES.get(str(profile), (None, None))
    objective = raw.get("objective", DEFAULT_OBJECTIVE)
    classifier = raw.get("classifier")
    classifier = classifier if isinstance(classifier, Mapping) else {}
    timeout_ms = classifier.get("timeout_ms") or DEFAULT_CLASSIFIER_TIMEOUT_MS
    return AutoSettings(
        objective=objective if objective in OBJECTIVES else DEFAULT_OBJECTIVE,
        max_input=max_input,
        max_output=max_output,
        patterns=tuple(str(p) for p in raw.get("allowed_models") or ()),
        fallback=bool(raw.get("fallback", DEFAULT_FALLBACK)),
        classifier_model=classifier.get("model") or None,
        classifier_timeout_s=float(timeout_ms) / 1000.0,
    )


def _lower(cap: float | None, other: float | None) -> float | None:
    if other is None:
        return cap
    return other if cap is None else min(cap, other)


def narrow_for_auto(
    policy: PolicyView, settings: AutoSettings, catalog_models: Iterable[str]
) -> PolicyView:
    """The policy the auto router decides under: spend caps lower the price caps, the
    patterns become a model allow list (inside the policy's own, never wider)."""
    narrowed = replace(
        policy,
        max_price_prompt=_lower(policy.max_price_prompt, settings.max_input),
        max_price_completion=_lower(policy.max_price_completion, settings.max_output),
    )
    if not settings.patterns:
        return narrowed
    matching = {
        m for m in catalog_models if any(fnmatch.fnmatchcase(m, p) for p in settings.patterns)
    }
    allowed = matching & policy.model_allow if policy.model_allow else matching
    # An empty allow list means "all"; nothing matching must mean nothing allowed.
    return replace(narrowed, model_allow=frozenset(allowed) or frozenset({"(none)"}))


def first_model_only(ordered: tuple[EndpointInfo, ...]) -> tuple[EndpointInfo, ...]:
    """With `fallback: false` the auto router tries only its top-ranked model's endpoints."""
    if not ordered:
        return ordered
    top = ordered[0].model
    return tuple(e for e in ordered if e.model == top)
