"""What one API key may use: its preset (SPEC R-PRE-1) and its allowed model patterns
(R-KEY-1), folded into values the rest of the engine already obeys.

A key's scope narrows its workspace's policy once, when the snapshot is built: the
preset's provider allow list intersects the policy's, its ignore list joins the deny
list, and the models both the preset and the key allow intersect the policy's model allow
list. Because the filter (routing/engine/filters.py) reads that one narrowed
`PolicyView` for every decision — each fallback model, each retry, each affinity pin, the
auto router's candidates — nothing a request does afterwards can leave the scope (R-BEY-5).

Patterns are matched against the catalog's names when the scope is built, and a name a
key may request brings what it stands for: a virtual model its targets, a tiered alias its
easy and hard targets. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from typing import Any

from routing.engine.policy import NOTHING
from routing.engine.types import PolicyView

SYSTEM_ROLES = frozenset({"system", "developer"})


@dataclass(frozen=True, slots=True)
class PresetView:
    """A preset as the engine reads it; empty means "no restriction" / "no default"."""

    slug: str
    allowed_models: tuple[str, ...] = ()  # patterns (fnmatch), matched against catalog names
    provider_allow: frozenset[str] = frozenset()
    provider_ignore: frozenset[str] = frozenset()
    default_prompt: str = ""
    default_params: Mapping[str, Any] = field(default_factory=dict)


def matching(patterns: Iterable[str], names: Iterable[str]) -> frozenset[str]:
    """The names any of `patterns` matches (case-sensitive, like model slugs)."""
    listed = tuple(patterns)
    return frozenset(name for name in names if any(fnmatchcase(name, p) for p in listed))


def allowed_names(
    pattern_lists: Iterable[tuple[str, ...]],
    names: Iterable[str],
    expands_to: Mapping[str, Iterable[str]],
) -> frozenset[str] | None:
    """The names a key may request: those every non-empty pattern list matches, closed
    over `expands_to` (virtual model → targets, tiered alias → its tiers). None when no list
    restricts anything."""
    lists = [patterns for patterns in pattern_lists if patterns]
    if not lists:
        return None
    catalog = tuple(names)
    allowed = frozenset(catalog)
    for patterns in lists:
        allowed &= matching(patterns, catalog)
    closed, todo = set(allowed), list(allowed)
    while todo:  # a virtual model may name another virtual model
        for target in expands_to.get(todo.pop(), ()):
            if target not in closed:
                closed.add(target)
                todo.append(target)
    return frozenset(closed)


def key_policy(
    policy: PolicyView, allowed: frozenset[str] | None, preset: PresetView | None
) -> PolicyView:
    """`policy` narrowed to the key's scope; never wider than `policy` (empty = any)."""
    model_allow = _intersect(policy.model_allow, allowed)
    provider_allow = policy.provider_allow
    provider_deny = policy.provider_deny
    if preset is not None:
        provider_allow = _intersect(provider_allow, preset.provider_allow or None)
        provider_deny = provider_deny | preset.provider_ignore
    if (model_allow, provider_allow, provider_deny) == (
        policy.model_allow,
        policy.provider_allow,
        policy.provider_deny,
    ):
        return policy
    return replace(
        policy, model_allow=model_allow, provider_allow=provider_allow, provider_deny=provider_deny
    )


def _intersect(current: frozenset[str], narrower: frozenset[str] | None) -> frozenset[str]:
    if narrower is None:
        return current
    both = narrower & current if current else narrower
    return both or NOTHING  # empty would read as "any": an empty intersection allows nothing


def with_defaults(body: dict[str, Any], preset: PresetView | None) -> dict[str, Any]:
    """A chat-shaped body with the preset's defaults where the request is silent: each
    default parameter the body does not set, and the default prompt as the first message
    when the body has no system or developer message. `body` itself is not changed."""
    if preset is None or not (preset.default_params or preset.default_prompt):
        return body
    filled = {**{k: v for k, v in preset.default_params.items() if k not in body}, **body}
    messages = body.get("messages")
    if preset.default_prompt and isinstance(messages, list) and not _has_system(messages):
        filled["messages"] = [{"role": "system", "content": preset.default_prompt}, *messages]
    return filled


def _has_system(messages: list[Any]) -> bool:
    return any(isinstance(m, Mapping) and m.get("role") in SYSTEM_ROLES for m in messages)
