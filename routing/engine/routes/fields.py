"""Reading one untrusted mapping of a route, key by key, collecting every problem.

`Fields` wraps one mapping at a path such as `workspaces[0].routes[0].nodes.split`. Its getters
check a type and a range; a bad or missing value records a `Problem` with the field's full
path and returns None, so one pass over a route reports every problem instead of stopping at
the first (CONFIG.md: "reports each problem with its path"). Unknown keys are problems too.
The messages follow the wording of the configuration loader (`is required`, `unknown key`).
Pure.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

SLUG = re.compile(r"[-a-zA-Z0-9_]+")  # Django's SlugField, as the loader's slugs
SLUG_MAX_CHARS = 64
_DIGITS = re.compile(r"(\d+)")


@dataclass(frozen=True, slots=True)
class Problem:
    path: str  # `workspaces[0].routes[0].nodes.split.branches[1].next`
    message: str  # `unknown node 'canry'`

    def __str__(self) -> str:
        return f"{self.path or '(top level)'}: {self.message}"


class RouteInvalid(Exception):
    """A route that cannot be used; `problems` lists every problem found, sorted."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(sorted(problems, key=problem_order))
        super().__init__("\n".join(str(problem) for problem in self.problems))


def problem_order(problem: Problem) -> tuple[Any, ...]:
    """Sort by path with numbers compared as numbers (`branches[2]` before `branches[10]`),
    then by message: the same route always lists its problems in the same order, however
    its mappings happen to be ordered."""
    parts = _DIGITS.split(problem.path)
    return (tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts), problem.message)


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def is_number(value: object) -> bool:
    """A finite int or float, not a bool (YAML `true` is an int to Python)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def quoted_hint(value: object) -> str:
    return f' (quote it: "{value}")' if is_number(value) or isinstance(value, bool) else ""


class Fields:
    """One mapping at `path`, its keys limited to `keys`; problems go to `problems`.

    A getter without `required` returns None for an absent key. A non-mapping is reported
    once and reads as empty, without a "required" problem for each of its keys.
    """

    def __init__(
        self, raw: object, path: str, problems: list[Problem], keys: Iterable[str]
    ) -> None:
        self.path = path
        self.problems = problems
        self.broken = not isinstance(raw, Mapping)
        self.raw: Mapping[Any, Any] = raw if isinstance(raw, Mapping) else {}
        if self.broken:
            problems.append(Problem(path, "must be a mapping"))
        allowed = tuple(keys)
        for key in self.raw:
            if not isinstance(key, str) or key not in allowed:
                hint = difflib.get_close_matches(str(key), allowed, n=1)
                suffix = f" (did you mean {hint[0]!r}?)" if hint else ""
                problems.append(Problem(self.at(str(key)), f"unknown key{suffix}"))

    def at(self, key: str) -> str:
        return join(self.path, key)

    def has(self, key: str) -> bool:
        return key in self.raw

    def get(self, key: str) -> Any:
        return self.raw.get(key)

    def error(self, key: str, message: str) -> None:
        self.problems.append(Problem(self.at(key), message))

    def present(self, key: str, required: bool) -> bool:
        """Whether `key` has a value to check; records "is required" when it must."""
        if key in self.raw and self.raw[key] is not None:
            return True
        if required and not self.broken:
            self.error(key, "is required")
        return False

    def text(self, key: str, *, required: bool = False) -> str | None:
        if not self.present(key, required):
            return None
        value = self.raw[key]
        if not isinstance(value, str):
            self.error(key, f"must be a string{quoted_hint(value)}")
        elif not value.strip():
            self.error(key, "must not be empty")
        else:
            return value
        return None

    def slug(self, key: str, *, required: bool = False) -> str | None:
        value = self.text(key, required=required)
        if value is not None and not is_slug(value):
            self.error(key, f"{value!r} is not a slug (letters, digits, '-' and '_')")
            return None
        return value

    def choice(self, key: str, choices: Sequence[Any], *, required: bool = False) -> Any:
        if not self.present(key, required):
            return None
        value = self.raw[key]
        # `in` alone would take True for 1; a bool is never one of the choices here.
        if isinstance(value, bool) or value not in choices:
            self.error(key, f"{value!r} is not one of {', '.join(str(c) for c in choices)}")
            return None
        return value

    def boolean(self, key: str) -> bool | None:
        if not self.present(key, False):
            return None
        value = self.raw[key]
        if isinstance(value, bool):
            return value
        self.error(key, "must be true or false")
        return None

    def integer(self, key: str, *, minimum: int, required: bool = False) -> int | None:
        if not self.present(key, required):
            return None
        value = self.raw[key]
        if isinstance(value, int) and not isinstance(value, bool) and value >= minimum:
            return value
        self.error(key, f"must be a whole number ≥ {minimum}")
        return None

    def number(self, key: str, *, above_zero: bool, required: bool = False) -> float | None:
        if not self.present(key, required):
            return None
        value = self.raw[key]
        if is_number(value) and (value > 0 if above_zero else value >= 0):
            return float(value)
        self.error(key, "must be a number > 0" if above_zero else "must be a number ≥ 0")
        return None

    def items(
        self, key: str, *, required: bool = False, allow_empty: bool = False
    ) -> list[Any] | None:
        """A list (non-empty unless `allow_empty`), its items for the caller to check at
        `key[i]`."""
        if not self.present(key, required):
            return None
        value = self.raw[key]
        if isinstance(value, list) and (value or allow_empty):
            return value
        self.error(key, "must be a list" if allow_empty else "must be a non-empty list")
        return None

    def strings(
        self, key: str, *, required: bool = False, allow_empty: bool = False
    ) -> list[str] | None:
        """A list of non-empty strings; None when any item is bad."""
        values = self.items(key, required=required, allow_empty=allow_empty)
        if values is None:
            return None
        good = True
        for index, item in enumerate(values):
            if not isinstance(item, str) or not item.strip():
                self.error(f"{key}[{index}]", f"must be a non-empty string{quoted_hint(item)}")
                good = False
        return values if good else None


def is_slug(value: str) -> bool:
    return bool(SLUG.fullmatch(value)) and len(value) <= SLUG_MAX_CHARS
