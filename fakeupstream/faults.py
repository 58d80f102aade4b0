"""Fault injection: the fault kinds, the fault script, and which fault the next request gets.

A fault comes, in order of precedence, from the request's `X-Fake-Fault` header, from the
active fault script (entries consumed in order, each `times` times), or from the profile's
seeded `error_rate` draw. The script is replaced as a whole through `POST /_fake/faults`.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class FaultKind(StrEnum):
    STATUS = "status"  # answer with this HTTP status (300-599) and a provider-shaped error body
    HANG = "hang"  # accept the request and never answer, until the client disconnects
    HOLD = "hold"  # accept the request and answer normally once released (POST /_fake/release)
    DISCONNECT = "disconnect"  # close the connection without a response
    DROP_MID_STREAM = "drop_mid_stream"  # send N content chunks, then close abruptly
    MALFORMED = "malformed"  # HTTP 200 with a body (or SSE line) that does not parse
    NO_ANSWER = "no_answer"  # HTTP 200, well-formed JSON of the right kind without the answer
    LATENCY = "latency"  # wait this many ms before the response head, then answer normally
    ERROR_EVENT = "error_event"  # HTTP 200, then an in-band error before any content
    # (`error_event:400` makes it an error of that status's type; default: overloaded/500)
    IGNORE_FORMAT = "ignore_format"  # answer prose even when a JSON schema was asked for


# Kinds whose argument is required, and the smallest value it may take.
_ARG_MINIMUM = {FaultKind.STATUS: 300, FaultKind.DROP_MID_STREAM: 0, FaultKind.LATENCY: 0}
# Kinds whose argument is optional, and the smallest value it may take.
_OPTIONAL_ARG_MINIMUM = {FaultKind.ERROR_EVENT: 400}


@dataclass(frozen=True, slots=True)
class Fault:
    kind: FaultKind
    arg: int | None = None  # status code, chunk count or milliseconds, depending on kind


def parse_fault(text: str) -> Fault:
    """Parse `kind[:arg]` (`status:503`, `hang`, `drop_mid_stream:3`, `latency:250`).

    Raises ValueError naming the problem for an unknown kind or a missing/bad argument.
    """
    kind_text, _, arg_text = text.strip().partition(":")
    try:
        kind = FaultKind(kind_text)
    except ValueError:
        known = ", ".join(k.value for k in FaultKind)
        raise ValueError(f"unknown fault {kind_text!r} (known: {known})") from None
    minimum = _ARG_MINIMUM.get(kind, _OPTIONAL_ARG_MINIMUM.get(kind))
    if minimum is None or (kind in _OPTIONAL_ARG_MINIMUM and not arg_text):
        if arg_text:
            raise ValueError(f"fault {kind} takes no argument")
        return Fault(kind)
    if not arg_text.isdigit():
        raise ValueError(f"fault {kind} needs a non-negative integer argument, as {kind}:N")
    arg = int(arg_text)
    is_status = kind in (FaultKind.STATUS, FaultKind.ERROR_EVENT)
    if arg < minimum or (is_status and arg > 599):
        raise ValueError(f"fault {kind}:{arg} is out of range")
    return Fault(kind, arg)


@dataclass(slots=True)
class _Entry:
    fault: Fault
    remaining: int | None  # None = forever


class FaultScript:
    """An ordered list of faults consumed by successive requests, plus the `down` switch."""

    def __init__(self, entries: list[_Entry] | None = None, *, down: bool = False) -> None:
        self._entries = deque(entries or ())
        self.down = down

    def take(self) -> Fault | None:
        """The fault for the next request, consuming one use of the head entry."""
        if not self._entries:
            return None
        head = self._entries[0]
        if head.remaining is not None:
            head.remaining -= 1
            if head.remaining <= 0:
                self._entries.popleft()
        return head.fault

    def describe(self) -> dict[str, Any]:
        """The script as JSON-ready data (what is left of it)."""
        faults = [{"fault": _fault_text(e.fault), "times": e.remaining} for e in self._entries]
        return {"faults": faults, "down": self.down}


def parse_fault_script(document: Any) -> FaultScript:
    """Build a script from `{"faults": [{"fault": "status:503", "times": 3}], "down": false}`.

    `times` defaults to 1; `null` means forever. Raises ValueError on any malformed part.
    """
    if not isinstance(document, Mapping):
        raise ValueError("fault script must be a JSON object")
    items = document.get("faults", [])
    if not isinstance(items, list):
        raise ValueError("'faults' must be a list")
    down = document.get("down", False)
    if not isinstance(down, bool):
        raise ValueError("'down' must be true or false")
    return FaultScript([_parse_entry(index, item) for index, item in enumerate(items)], down=down)


def _parse_entry(index: int, item: Any) -> _Entry:
    if not isinstance(item, Mapping) or not isinstance(item.get("fault"), str):
        raise ValueError(f"faults[{index}] must be an object with a 'fault' string")
    times = item.get("times", 1)
    if times is not None and (not isinstance(times, int) or isinstance(times, bool) or times < 1):
        raise ValueError(f"faults[{index}].times must be a positive integer or null")
    try:
        return _Entry(parse_fault(item["fault"]), times)
    except ValueError as exc:
        raise ValueError(f"faults[{index}]: {exc}") from None


def draw_error_status(rng: random.Random, error_rate: Mapping[int, float]) -> int | None:
    """One seeded draw: the status to fail with, or None to answer normally.

    Exactly one draw per request whenever an error rate is set, so the sequence of outcomes
    depends only on the seed and the request order.
    """
    if not error_rate:
        return None
    point = rng.random()
    for status, rate in sorted(error_rate.items()):
        if point < rate:
            return status
        point -= rate
    return None


def _fault_text(fault: Fault) -> str:
    return fault.kind.value if fault.arg is None else f"{fault.kind.value}:{fault.arg}"
