"""The data class of a request (SPEC R-POL-1, D-22): what kind of data it carries, so that
a workspace can refuse classes it does not allow and endpoints serve only the classes they
are cleared for.

A request names its class with `metadata.data_class` or the `X-Switchyard-Data-Class`
header (both given, they must agree); otherwise it is the policy's first allowed class, or
`internal`. A class outside the policy's list is refused before routing (the gateway's
403 `data_class_not_allowed`); an endpoint whose `data_classes` does not list it is
rejected by the filter with `data_class_not_cleared` (routing/engine/filters.py). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping

from routing.engine.resolve import ResolveError

HEADER = "X-Switchyard-Data-Class"
DEFAULT_CLASS = "internal"
MAX_CLASS_CHARS = 64


class DataClassNotAllowed(Exception):
    def __init__(self, data_class: str, allowed: tuple[str, ...]) -> None:
        super().__init__(
            f"Data class `{data_class}` is not allowed in this workspace "
            f"(allowed: {', '.join(allowed)})."
        )
        self.data_class = data_class


def request_data_class(
    named: str | None, headers: Mapping[str, str], allowed: tuple[str, ...]
) -> str:
    """The request's class from `metadata.data_class` (`named`) or the header;
    ResolveError for a malformed or ambiguous one, DataClassNotAllowed for one the
    policy's `allowed` (empty = any) leaves out."""
    sent = headers.get(HEADER)
    for value, param in ((named, "metadata.data_class"), (sent, HEADER)):
        if value is not None and not (0 < len(value.strip()) <= MAX_CLASS_CHARS):
            raise ResolveError(f"`{param}` must be a class name of 1 to 64 characters", param)
    if named is not None and sent is not None and named.strip() != sent.strip():
        raise ResolveError(f"`metadata.data_class` and {HEADER} name different classes", HEADER)
    given = (named or sent or "").strip()
    data_class = given or (allowed[0] if allowed else DEFAULT_CLASS)
    if allowed and data_class not in allowed:
        raise DataClassNotAllowed(data_class, allowed)
    return data_class
