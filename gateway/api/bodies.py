"""Parsing and validating request bodies: orjson, and 400s that name the field."""

from __future__ import annotations

from typing import Any

import orjson
from django.http import HttpRequest

from gateway.api.errors import ApiError, invalid

CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


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
        raise invalid(f"request body is not valid JSON: {exc.msg}", code="invalid_json") from None
    if not isinstance(body, dict):
        raise invalid("request body must be a JSON object", code="invalid_json")
    return body


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
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise invalid("`messages` is required and must be a non-empty array", param="messages")
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise invalid("each message must be an object", param=f"messages[{index}]")
        if message.get("role") not in CHAT_ROLES:
            raise invalid(
                f"role must be one of {', '.join(sorted(CHAT_ROLES))}",
                param=f"messages[{index}].role",
            )
    for name in ("max_tokens", "max_completion_tokens"):
        value = body.get(name)
        if value is not None and (not isinstance(value, int) or value < 1):
            raise invalid(f"`{name}` must be a positive integer", param=name)
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise invalid("`tools` must be an array", param="tools")


def validate_embeddings(body: dict[str, Any]) -> None:
    value = body.get("input")
    if isinstance(value, str) and value:
        return
    if isinstance(value, list) and value:
        return
    raise invalid("`input` is required: a string or a non-empty array", param="input")
