"""What changed between two versions of a route (SPEC R-ROUTE-2, D-25 `route diff`), node by
node on the raw mappings as saved: nodes added, removed, and changed field by field, plus the
top-level fields (description, models, start, the rollout guard field by field). Raw, not
parsed: a diff shows what the author wrote, and needs no catalog. The order is fixed — top
fields, then nodes by id, then the guard — so the same two versions always read the same.
Pure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Top-level keys in the order a diff lists them; any other key follows, sorted.
TOP_ORDER = ("slug", "description", "models", "start", "nodes", "rollout_guard")
# Mappings compared field by field; every other value is compared whole.
_BY_FIELD = ("nodes", "rollout_guard")
# A string shown without quotes: no flow-syntax characters, no edge spaces, not a keyword.
_PLAIN = re.compile(r"[^\s,:{}\[\]#'\"][^,:{}\[\]#'\"]*(?<!\s)")
_KEYWORDS = frozenset({"true", "false", "null", "yes", "no", "on", "off", "~"})


@dataclass(frozen=True, slots=True)
class Change:
    kind: str  # "+" added, "-" removed, "~" changed
    path: str  # `nodes.split.branches`, `nodes.canary2`, `rollout_guard.max_p99_ratio`
    before: Any = None  # None when added
    after: Any = None  # None when removed


def diff_routes(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[Change, ...]:
    """Every difference from `old` to `new`, in a fixed order; () when they are equal."""
    extra = sorted(k for k in {*old, *new} if k not in TOP_ORDER)
    changes: list[Change] = []
    for key in (*TOP_ORDER, *extra):
        before, after = old.get(key), new.get(key)
        if key == "nodes" and isinstance(before, Mapping) and isinstance(after, Mapping):
            changes.extend(_diff_nodes(before, after))
        elif key in _BY_FIELD and isinstance(before, Mapping) and isinstance(after, Mapping):
            changes.extend(_diff_fields(key, before, after))
        else:
            changes.extend(_diff_value(key, key in old, key in new, before, after))
    return tuple(changes)


def _diff_nodes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    changes: list[Change] = []
    for node_id in sorted({*old, *new}, key=str):
        path = f"nodes.{node_id}"
        before, after = old.get(node_id), new.get(node_id)
        if isinstance(before, Mapping) and isinstance(after, Mapping):
            changes.extend(_diff_fields(path, before, after))
        else:
            changes.extend(_diff_value(path, node_id in old, node_id in new, before, after))
    return changes


def _diff_fields(path: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    """Field by field, `type` first (it explains the rest), then by name."""
    keys = sorted({*old, *new}, key=lambda k: (k != "type", str(k)))
    changes: list[Change] = []
    for key in keys:
        changes.extend(
            _diff_value(f"{path}.{key}", key in old, key in new, old.get(key), new.get(key))
        )
    return changes


def _diff_value(path: str, was: bool, now: bool, before: Any, after: Any) -> list[Change]:
    if was and now:
        return [] if _equal(before, after) else [Change("~", path, before, after)]
    if now:
        return [Change("+", path, None, after)]
    return [Change("-", path, before, None)] if was else []


def _equal(first: Any, second: Any) -> bool:
    """Equal as saved JSON: key order does not count, and `true` is not `1`."""
    return _canonical(first) == _canonical(second)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def render_diff(changes: tuple[Change, ...] | list[Change]) -> list[str]:
    """One line per change: `~ path: before → after`, `+ path: value`, `- path`; values
    in YAML's flow style, as the configuration is written."""
    lines: list[str] = []
    for change in changes:
        if change.kind == "~":
            lines.append(
                f"~ {change.path}: {flow_value(change.before)} → {flow_value(change.after)}"
            )
        elif change.kind == "+":
            lines.append(f"+ {change.path}: {flow_value(change.after)}")
        else:
            lines.append(f"- {change.path}")
    return lines


def flow_value(value: Any) -> str:
    """`value` in YAML's flow style, as a diff line and the studio's side by side show it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return value if _is_plain(value) else json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        return (
            "{"
            + ", ".join(f"{flow_value(str(k))}: {flow_value(v)}" for k, v in value.items())
            + "}"
        )
    if isinstance(value, list | tuple):
        return "[" + ", ".join(flow_value(item) for item in value) + "]"
    return json.dumps(str(value))


def _is_plain(text: str) -> bool:
    if not _PLAIN.fullmatch(text) or text.lower() in _KEYWORDS:
        return False
    try:  # `"50"` must not read as the number 50
        float(text)
    except ValueError:
        return True
    return False
