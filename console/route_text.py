"""A route as the studio's editor shows it: YAML text of a version's content (CONFIG.md's
route shape, without the slug, which the page holds), the text read back into content, and
each validation problem located at its node and field — so a person sees "node `split`,
field `branches[1].next`: unknown node 'canry'" beside the line they wrote.

Text is read with `yaml.safe_load` and nothing else; a syntax error names its line. What the
text means is checked by the engine's own `parse_route`, through `save_route`, never here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from routing.engine.routes import Problem

TOP_ORDER = ("description", "models", "start", "nodes", "rollout_guard")
MAX_TEXT_CHARS = 100_000  # a route of 8-fallback nodes is a few KiB; this bounds a paste


class RouteTextError(ValueError):
    """Text that is not a route's YAML mapping; nothing was saved."""


@dataclass(frozen=True, slots=True)
class LocatedProblem:
    node: str  # "" for a top-level field
    field: str  # `branches[1].next`, `start`, `rollout_guard.node`; "" for the node itself
    message: str


def route_text(content: Mapping[str, Any]) -> str:
    """`content` as block YAML in the order CONFIG.md writes it: top fields, then each node on
    its own line (its scalar fields in flow style), then the rollout guard."""
    ordered = {key: content[key] for key in TOP_ORDER if key in content}
    ordered |= {k: v for k, v in content.items() if k not in ordered and k != "slug"}
    text: str = yaml.safe_dump(
        ordered, sort_keys=False, default_flow_style=None, width=100, allow_unicode=True
    )
    return text


def read_route_text(text: str, slug: str) -> dict[str, Any]:
    """The route `slug` as written in `text`; RouteTextError for text that is not a mapping
    of YAML (with the line), or that names another slug."""
    if len(text) > MAX_TEXT_CHARS:
        raise RouteTextError(f"the route is longer than {MAX_TEXT_CHARS:,} characters")
    try:
        data = yaml.safe_load(text) if text.strip() else None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(error, "problem", None) or "not YAML"
        raise RouteTextError(f"{where}{problem}") from None
    if not isinstance(data, dict):
        raise RouteTextError("the route must be a mapping with `start` and `nodes`")
    written = data.pop("slug", slug)
    if written != slug:
        raise RouteTextError(f"slug: {written!r} is not this route ({slug!r})")
    return {"slug": slug, **data}


def locate(problem: Problem) -> LocatedProblem:
    """`nodes.split.branches[1].next` → node `split`, field `branches[1].next`."""
    path = problem.path
    if path.startswith("nodes."):
        node, _, field = path.removeprefix("nodes.").partition(".")
        return LocatedProblem(node, field, problem.message)
    return LocatedProblem("", path, problem.message)
