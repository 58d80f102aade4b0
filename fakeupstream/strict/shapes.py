"""What both APIs' checks share: a JSON value's type, a field read with its path, and the
`Violation` a check raises, which each API puts in its own words (anthropic.py, openai.py)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

Path = tuple[str | int, ...]

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # both APIs
TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, Mapping),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
}


class Violation(Exception):
    def __init__(self, path: Path, text: str, kind: str) -> None:
        super().__init__(text)
        self.path, self.text, self.kind = path, text, kind


def fail(path: Path, text: str = "", kind: str = "value") -> NoReturn:
    """kind: `value` (text says what is wrong), `type` (text names the expected type),
    `missing` or `extra`."""
    raise Violation(path, text, kind)


def field(
    obj: Mapping[str, Any],
    key: str,
    path: Path,
    expected: str,
    *,
    required: bool = False,
    nullable: bool = False,
) -> Any:
    """obj[key] when it has the expected JSON type; None when absent (and allowed)."""
    value = obj.get(key)
    if value is None:
        if required:
            fail((*path, key), kind="missing")
        if key in obj and not nullable:
            fail((*path, key), expected, "type")
        return None
    if not TYPES[expected](value):
        fail((*path, key), expected, "type")
    return value


def json_object(value: Any, path: Path, allowed: frozenset[str] | set[str] | None = None) -> Any:
    if not isinstance(value, Mapping):
        fail(path, "object", "type")
    for key in value if allowed is not None else ():
        if key not in allowed:
            fail((*path, key), kind="extra")
    return value


def number_between(
    obj: Mapping[str, Any], key: str, low: float, high: float, *, nullable: bool = False
) -> None:
    value = field(obj, key, (), "number", nullable=nullable)
    if value is not None and not low <= value <= high:
        fail((key,), f"must be between {low} and {high}")
