"""Parsing and validating request bodies: orjson, and 400s that name the field.

`read_json` turns the raw body into a dict or a 400/413: malformed JSON (invalid UTF-8,
NaN, infinities) and bodies nested deeper than `MAX_JSON_DEPTH` never reach routing.
`validate_chat` checks messages and the standard OpenAI parameters (the table in
`gateway.request_path.params`) before routing; unknown fields pass through to the upstream.
"""

from __future__ import annotations

from typing import Any

import orjson
from django.http import HttpRequest

from gateway.errors import ApiError, invalid
from gateway.request_path.params import STANDARD_PARAMS, BadParam, content

CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
# Levels of arrays/objects a body may nest. orjson parses up to 1024 but serialises only
# up to 254, and the upstream request is re-serialised: deeper bodies used to be a 500.
# Real requests (a JSON schema in `tools` included) stay far below 64.
MAX_JSON_DEPTH = 64


def read_json(request: HttpRequest, max_body_bytes: int) -> dict[str, Any]:
    length = request.headers.get("Content-Length")
    if length and length.isdigit() and int(length) > max_body_bytes:
        raise ApiError(
            413, f"request body exceeds {max_body_bytes} bytes", code="payload_too_large"
        )
    raw = request.body
    if len(raw) > max_body_bytes:
        raise ApiError(
            413, f"request body exceeds {max_body_bytes} bytes", code="payload_too_large"
        )
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if "depth" in exc.msg or "recursion" in exc.msg.lower():
            raise too_deep() from None
        raise invalid(f"request body is not valid JSON: {exc.msg}", code="invalid_json") from None
    if not isinstance(body, dict):
        raise invalid("request body must be a JSON object", code="invalid_json")
    if is_deeper_than(body, MAX_JSON_DEPTH):
        raise too_deep()
    return body


def too_deep() -> ApiError:
    return invalid(
        f"request body nests deeper than {MAX_JSON_DEPTH} levels of arrays and objects",
        code="invalid_json",
    )


def is_deeper_than(value: Any, limit: int) -> bool:
    """Whether containers nest more than `limit` levels (the outermost is level 1).

    Iterative, so a hostile body cannot exhaust the Python stack; only containers are
    pushed, so a long flat array costs one pass over its items."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1))
    return False


def require_model(body: dict[str, Any]) -> str:
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        raise invalid("`model` is required and must be a non-empty string", param="model")
    return model


def require_bool(body: dict[str, Any], name: str) -> bool:
    value = body.get(name, False)
    if not isinstance(value, bool):
        raise invalid(f"`{name}` must be a boolean", param=name)
    return value


def validate_chat(body: dict[str, Any]) -> None:
    """Raise a 400 naming the first bad message field or standard parameter (SPEC D-19).
    A parameter set to null counts as absent."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise invalid("`messages` is required and must be a non-empty array", param="messages")
    try:
        for index, message in enumerate(messages):
            if not isinstance(message, dict):
                raise invalid("each message must be an object", param=f"messages[{index}]")
            role = message.get("role")
            if not isinstance(role, str) or role not in CHAT_ROLES:
                raise invalid(
                    f"role must be one of {', '.join(sorted(CHAT_ROLES))}",
                    param=f"messages[{index}].role",
                )
            content(message.get("content"), f"messages[{index}].content")
        for name, check in STANDARD_PARAMS.items():
            if body.get(name) is not None:
                check(body[name], name)
    except BadParam as exc:
        raise invalid(str(exc), param=exc.param) from None


def validate_embeddings(body: dict[str, Any]) -> None:
    """OpenAI's `input` forms: a string, an array of strings, a token array, or an array
    of token arrays (non-empty); `encoding_format` float or base64."""
    value = body.get("input")
    if not _is_embedding_input(value):
        raise invalid(
            "`input` is required: a string, an array of strings, an array of token ids "
            "or an array of token-id arrays, not empty",
            param="input",
        )
    encoding = body.get("encoding_format")
    if encoding is not None and encoding not in ("float", "base64"):
        raise invalid("`encoding_format` must be float or base64", param="encoding_format")
    dimensions = body.get("dimensions")
    if dimensions is not None and (type(dimensions) is not int or dimensions < 1):
        raise invalid("`dimensions` must be a positive integer", param="dimensions")


def _is_token_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(type(t) is int for t in value)


def _is_embedding_input(value: Any) -> bool:
    if isinstance(value, str):
        return bool(value)
    if not isinstance(value, list) or not value:
        return False
    if all(isinstance(item, str) for item in value):
        return True
    return _is_token_array(value) or all(_is_token_array(item) for item in value)
