"""Structured outputs: with a `json_schema` response format the fake answers a small JSON
document that conforms to the schema, as a model with structured outputs would, and a tool
call's arguments conform to the tool's schema (a forced tool is how a gateway asks an
Anthropic model for structured output). The values are fixed (first enum value, the middle
of a numeric range, "fake" for strings), so tests can assert them. Covers the JSON Schema
subset OpenAI's structured outputs accept: objects with properties, arrays, enums,
strings, numbers, integers, booleans, null.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from fakeupstream.replies import TOOL_ARGUMENTS_JSON

MAX_DEPTH = 8  # a recursive or absurdly nested schema gets nulls below this depth


def requested_schema(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The schema of `response_format: {type: json_schema, json_schema: {schema}}`, an open
    object for JSON mode (`{type: json_object}`, answered `{}`), else None."""
    response_format = body.get("response_format")
    kind = response_format.get("type") if isinstance(response_format, Mapping) else None
    if kind == "json_object":
        return {"type": "object"}
    if kind != "json_schema":
        return None
    wrapper = response_format.get("json_schema")
    schema = wrapper.get("schema") if isinstance(wrapper, Mapping) else None
    return schema if isinstance(schema, Mapping) else {}


def tool_arguments_json(body: Mapping[str, Any], tool_name: str) -> str:
    """The arguments of a call to `tool_name`: the usual `{"location": "Paris"}` when the
    tool's schema declares no properties, or a string `location` and requires nothing else;
    otherwise a document that conforms to the schema."""
    schema = _tool_schema(body, tool_name)
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return TOOL_ARGUMENTS_JSON
    location = properties.get("location")
    required = schema.get("required")
    takes_location = isinstance(location, Mapping) and location.get("type") == "string"
    if takes_location and "enum" not in location and set(required or []) <= {"location"}:
        return TOOL_ARGUMENTS_JSON
    return instance_json(schema)


def _tool_schema(body: Mapping[str, Any], tool_name: str) -> Mapping[str, Any]:
    """OpenAI tools keep the schema in `function.parameters`, Anthropic in `input_schema`."""
    for tool in body.get("tools") or []:
        if not isinstance(tool, Mapping):
            continue
        function = tool.get("function")
        if isinstance(function, Mapping) and function.get("name") == tool_name:
            schema = function.get("parameters")
        elif tool.get("name") == tool_name:
            schema = tool.get("input_schema")
        else:
            continue
        return schema if isinstance(schema, Mapping) else {}
    return {}


def instance_json(schema: Mapping[str, Any]) -> str:
    return orjson.dumps(instance(schema)).decode()


def instance(schema: Any, depth: int = 0) -> Any:
    if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
        return None
    if "const" in schema:
        return schema["const"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    for combinator in ("anyOf", "oneOf", "allOf"):
        options = schema.get(combinator)
        if isinstance(options, list) and options:
            return instance(options[0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and "properties" in schema):
        properties = schema.get("properties")
        if not isinstance(properties, Mapping):
            return {}
        return {name: instance(sub, depth + 1) for name, sub in properties.items()}
    if kind == "array":
        return [instance(schema.get("items"), depth + 1)]
    if kind in ("number", "integer"):
        return _number(schema, integer=kind == "integer")
    if kind == "boolean":
        return True
    if kind == "string":
        return "fake"
    return None


def _number(schema: Mapping[str, Any], *, integer: bool) -> float | int:
    low, high = schema.get("minimum"), schema.get("maximum")
    if isinstance(low, int | float) and isinstance(high, int | float):
        value = (low + high) / 2
    elif isinstance(low, int | float):
        value = low
    elif isinstance(high, int | float):
        value = min(high, 0)
    else:
        value = 0.5 if not integer else 1
    return round(value) if integer else value


def json_tokens(text: str, chars: int = 4) -> tuple[str, ...]:
    """The document cut into four-character pieces: a stream sends one per chunk, and the
    pieces join back into exactly the document."""
    return tuple(text[i : i + chars] for i in range(0, len(text), chars))
