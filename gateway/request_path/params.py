"""What each standard OpenAI chat parameter may hold (SPEC D-19), as a table of checkers.

`STANDARD_PARAMS` maps a top-level parameter to a checker `(value, param) -> None` that
raises `BadParam` naming the first offending path (`tools[1].function.name`, `stop[2]`) and
what it must be. `None` means absent wherever a field is optional. Fields not in a table pass
through unchecked, because upstreams and newer SDKs add fields the gateway must forward.
Pure: no Django, no I/O; `gateway.request_path.parse` turns `BadParam` into the 400.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

Checker = Callable[[Any, str], None]

MAX_STOP_SEQUENCES = 4  # OpenAI's limit for `stop`


class BadParam(ValueError):
    def __init__(self, param: str, expected: str) -> None:
        super().__init__(f"`{param}` must be {expected}")
        self.param = param
        self.expected = expected


def is_number(value: Any) -> bool:
    """A JSON number: int or finite float, not bool (bool is an int in Python)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    # orjson never yields NaN or inf, but dicts built in code can; ints are always finite.
    return isinstance(value, int) or math.isfinite(value)


def is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def number_between(low: float, high: float) -> Checker:
    def check(value: Any, param: str) -> None:
        if not (is_number(value) and low <= value <= high):
            raise BadParam(param, f"a number between {low} and {high}")

    return check


def integer(minimum: int | None = None) -> Checker:
    expected = "an integer" if minimum is None else f"an integer of at least {minimum}"

    def check(value: Any, param: str) -> None:
        if not is_integer(value) or (minimum is not None and value < minimum):
            raise BadParam(param, expected)

    return check


def one_of(*choices: str) -> Checker:
    expected = " or ".join(f'"{choice}"' for choice in choices)

    def check(value: Any, param: str) -> None:
        if not isinstance(value, str) or value not in choices:
            raise BadParam(param, expected)

    return check


def boolean(value: Any, param: str) -> None:
    if not isinstance(value, bool):
        raise BadParam(param, "a boolean")


def string(value: Any, param: str) -> None:
    if not isinstance(value, str):
        raise BadParam(param, "a string")


def name(value: Any, param: str) -> None:
    if not isinstance(value, str) or not value:
        raise BadParam(param, "a non-empty string")


def json_object(value: Any, param: str) -> None:
    if not isinstance(value, dict):
        raise BadParam(param, "an object")


def shape(
    required: Mapping[str, Checker], optional: Mapping[str, Checker] | None = None
) -> Checker:
    """An object whose named fields pass their checkers; other fields pass through.
    A missing required field reaches its checker as None, which fails with what it must be."""

    def check(value: Any, param: str) -> None:
        json_object(value, param)
        for field, checker in required.items():
            checker(value.get(field), f"{param}.{field}")
        for field, checker in (optional or {}).items():
            if value.get(field) is not None:
                checker(value[field], f"{param}.{field}")

    return check


def array_of(item: Checker) -> Checker:
    def check(value: Any, param: str) -> None:
        if not isinstance(value, list):
            raise BadParam(param, "an array")
        for index, element in enumerate(value):
            item(element, f"{param}[{index}]")

    return check


def stop(value: Any, param: str) -> None:
    expected = f"a string or an array of at most {MAX_STOP_SEQUENCES} strings"
    if isinstance(value, str):
        return
    if not isinstance(value, list) or len(value) > MAX_STOP_SEQUENCES:
        raise BadParam(param, expected)
    for index, sequence in enumerate(value):
        string(sequence, f"{param}[{index}]")


def logit_bias(value: Any, param: str) -> None:
    json_object(value, param)
    for token, bias in value.items():
        if not is_number(bias):
            raise BadParam(f"{param}.{token}", "a number")


FUNCTION = shape({"name": name}, {"description": string, "parameters": json_object})
TOOL = shape({"type": one_of("function"), "function": FUNCTION})
NAMED_TOOL_CHOICE = shape({"type": one_of("function"), "function": shape({"name": name})})
TOOL_CHOICE_MODES = ("none", "auto", "required")


def tool_choice(value: Any, param: str) -> None:
    if isinstance(value, dict):
        NAMED_TOOL_CHOICE(value, param)
    elif not isinstance(value, str) or value not in TOOL_CHOICE_MODES:
        raise BadParam(param, '"none", "auto", "required" or a {"type": "function"} object')


JSON_SCHEMA = shape(
    {"name": name}, {"description": string, "schema": json_object, "strict": boolean}
)
RESPONSE_FORMATS: dict[str, Checker] = {
    "text": json_object,
    "json_object": json_object,
    "json_schema": shape({"json_schema": JSON_SCHEMA}),
}


def response_format(value: Any, param: str) -> None:
    json_object(value, param)
    kind = value.get("type")
    if not isinstance(kind, str) or kind not in RESPONSE_FORMATS:
        raise BadParam(f"{param}.type", '"text", "json_object" or "json_schema"')
    RESPONSE_FORMATS[kind](value, param)


def content(value: Any, param: str) -> None:
    """A message's content: a string, null, or an array of parts with a string `type`.
    A `text` part's `text` must be a string too: the provider translators forward it as text."""
    if value is None or isinstance(value, str):
        return
    if not isinstance(value, list):
        raise BadParam(param, "a string, null or an array of content parts")
    for index, part in enumerate(value):
        json_object(part, f"{param}[{index}]")
        string(part.get("type"), f"{param}[{index}].type")
        if part["type"] == "text":
            string(part.get("text"), f"{param}[{index}].text")


STANDARD_PARAMS: dict[str, Checker] = {
    "temperature": number_between(0, 2),
    "top_p": number_between(0, 1),
    "n": integer(minimum=1),
    "max_tokens": integer(minimum=1),
    "max_completion_tokens": integer(minimum=1),
    "presence_penalty": number_between(-2, 2),
    "frequency_penalty": number_between(-2, 2),
    "stop": stop,
    "seed": integer(),
    "logit_bias": logit_bias,
    "stream": boolean,
    "stream_options": shape({}, {"include_usage": boolean}),
    "tools": array_of(TOOL),
    "tool_choice": tool_choice,
    "response_format": response_format,
}
