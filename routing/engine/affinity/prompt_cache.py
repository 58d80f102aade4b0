"""Cache-aware routing (SPEC R-EXE-6, PH): once a provider reports a real prompt-cache read
for a conversation, later turns of that conversation go to the same provider first, because
another provider would bill the whole prompt again at full price. The pin is to a provider,
not an endpoint: a provider's cache is usually shared by its regions' deployments of a model.

It lasts `CACHE_PIN_TTL_S` (15 min, about a provider's cache lifetime) for a conversation
recognised by its opening messages, and up to `SESSION_CACHE_PIN_TTL_S` (24 h of activity)
when the client names the session (`session_id` and the like,
routing/engine/affinity/sessions.py). Policy
filters and cooldowns always beat it: the pin only reorders the decision's own attempt list,
and a provider whose every endpoint is cooling or filtered out releases it. A request opts
out with `provider.cache_aware_routing: false`.

Pure: the caller passes the stored pin and the time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from routing.engine.affinity.keeping import reordered
from routing.engine.types import Decision, LiveState

CACHE_PIN_TTL_S = 15 * 60.0
SESSION_CACHE_PIN_TTL_S = 24 * 3600.0


def cache_aware(extra: Mapping[str, Any]) -> bool:
    """The request's opt-out (`provider.cache_aware_routing: false`); on by default."""
    return extra.get("cache_aware_routing") is not False


def cached_tokens(usage: Mapping[str, Any] | None) -> int:
    """Prompt tokens the provider served from its cache (OpenAI's usage shape, which the
    Anthropic translation produces too); 0 when none were reported."""
    details = (usage or {}).get("prompt_tokens_details")
    value = details.get("cached_tokens") if isinstance(details, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def pin_ttl_s(explicit_session: bool) -> float:
    return SESSION_CACHE_PIN_TTL_S if explicit_session else CACHE_PIN_TTL_S


def keep_cache_pin(
    decision: Decision, provider: str | None, live: LiveState
) -> tuple[Decision, str | None]:
    """The pinned provider's usable endpoints first, in the decision's order; returns the
    decision and "honored", "released" (no usable endpoint of it), or None (no pin)."""
    if provider is None:
        return decision, None
    usable = [e for e in decision.ordered if e.provider == provider and e.id not in live.cooling]
    if not usable:
        note = f"Prompt-cache pin on {provider} released."
        return replace(decision, notes=(*decision.notes, note)), "released"
    if decision.ordered[0].provider == provider:
        return decision, "honored"
    first = {e.id for e in usable}
    ordered = (*usable, *(e for e in decision.ordered if e.id not in first))
    note = f"Kept on {provider}, which holds this conversation's prompt cache."
    return reordered(decision, ordered, note), "honored"
