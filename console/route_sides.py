"""Two versions of a route side by side, node by node (SPEC R-ROUTE-2, D-25): the studio's
diff. Each section — the route's own fields, every node, the rollout guard — lists its
fields with the old value on the left and the new on the right, and says whether the
section was added, removed, changed or left as it was; a changed field is marked where
the engine's `diff_routes` says it changed, so the table and `route diff` never disagree.
Pure: raw contents in, rows out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from routing.engine.routes import diff_routes, flow_value

TOP_FIELDS = ("description", "models", "start")


@dataclass(frozen=True, slots=True)
class FieldRow:
    field: str
    before: str | None  # None: not on this side
    after: str | None
    changed: bool


@dataclass(frozen=True, slots=True)
class Section:
    title: str  # "route", "node split", "rollout guard"
    node: str  # the node id, "" for the route and the guard
    state: str  # added | removed | changed | same
    rows: tuple[FieldRow, ...]


def side_by_side(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Section]:
    """The sections of `old` → `new`: the route's fields, then nodes in the new version's
    order (removed ones after, in the old one's), then the guard."""
    changed_paths = {change.path for change in diff_routes(old, new)}
    old_top = {k: old[k] for k in TOP_FIELDS if k in old}
    new_top = {k: new[k] for k in TOP_FIELDS if k in new}
    sections = [_section("route", "", "", old_top, new_top, changed_paths, exists=(True, True))]
    old_nodes, new_nodes = _mapping(old.get("nodes")), _mapping(new.get("nodes"))
    for node in [*new_nodes, *(n for n in old_nodes if n not in new_nodes)]:
        sections.append(
            _section(
                f"node {node}",
                str(node),
                f"nodes.{node}.",
                _mapping(old_nodes.get(node)),
                _mapping(new_nodes.get(node)),
                changed_paths,
                exists=(node in old_nodes, node in new_nodes),
            )
        )
    old_guard, new_guard = old.get("rollout_guard"), new.get("rollout_guard")
    if old_guard or new_guard:
        sections.append(
            _section(
                "rollout guard",
                "",
                "rollout_guard.",
                _mapping(old_guard),
                _mapping(new_guard),
                changed_paths,
                exists=(bool(old_guard), bool(new_guard)),
            )
        )
    return sections


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _section(
    title: str,
    node: str,
    prefix: str,
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    changed_paths: set[str],
    *,
    exists: tuple[bool, bool],
) -> Section:
    fields = sorted({*old, *new}, key=lambda k: (k != "type", str(k)))
    whole = prefix.rstrip(".")
    rows = tuple(
        FieldRow(
            str(name),
            flow_value(old[name]) if name in old else None,
            flow_value(new[name]) if name in new else None,
            f"{prefix}{name}" in changed_paths or whole in changed_paths,
        )
        for name in fields
    )
    if exists == (False, True):
        state = "added"
    elif exists == (True, False):
        state = "removed"
    else:
        state = "changed" if any(row.changed for row in rows) else "same"
    return Section(title, node, state, rows)


def marks(sections: list[Section]) -> dict[str, str]:
    """{node id: added | changed | removed} for the diagrams beside the table."""
    return {s.node: s.state for s in sections if s.node and s.state != "same"}
