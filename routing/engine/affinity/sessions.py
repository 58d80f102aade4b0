"""Session detection (SPEC R-EXE-7): which conversation a request belongs to, for session
keeping, the warm prompt cache and smart tier pins.

An id the client sends wins, in this order: headers `X-Session-Id`, `Session-Id`; body
`session_id`, `prompt_cache_key`, `metadata.session_id`, `metadata.user_id`. Without one,
the conversation is recognised by a hash of what stays the same from turn to turn: the API
key, the model, the tools and the opening messages up to and including the first user turn
(the system prompts among them). Every key is scoped to its workspace and API key, so two
keys sending the same id never share a pin. Pure: hashlib and json only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from routing.engine.workload import iter_messages, message_text

SESSION_HEADERS = ("X-Session-Id", "Session-Id")
# Body fields in detection order: (source name, path into the body).
BODY_FIELDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("session_id", ("session_id",)),
    ("prompt_cache_key", ("prompt_cache_key",)),
    ("metadata.session_id", ("metadata", "session_id")),
    ("metadata.user_id", ("metadata", "user_id")),
)
SOURCES = ("header", *(source for source, _ in BODY_FIELDS), "hash")
# A client id longer than this is replaced by its sha256, so a pin store entry stays small
# whatever the client sends (ids are usually UUIDs, 36 characters).
MAX_ID_CHARS = 128


def get_header(headers: Mapping[str, str], name: str) -> str | None:
    """A header by case-insensitive name. Django's `request.headers` finds it by itself; a
    plain dict (tests, the replay's stored headers, the gateway's own child requests) is
    scanned when the name as written is not a key. Only a dict: scanning Django's
    mapping for a header it does not hold cost every request a few µs, twice."""
    value = headers.get(name)
    if value is None and isinstance(headers, dict):
        wanted = name.lower()
        value = next((found for key, found in headers.items() if key.lower() == wanted), None)
    return value


def detect_session(
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    *,
    workspace_id: int,
    api_key_id: int,
    model: str,
) -> tuple[str, str]:
    """(session key, source). The key is `{workspace_id}:{api_key_id}:{source}:{id}`, where
    `id` is the client's id (stripped; its sha256 when longer than MAX_ID_CHARS) or, for
    source `hash`, the conversation hash. `model` is the model as the client wrote it (the
    alias, not the tier target), so the hash does not change with the tier that answers.

    Blank ids are skipped; integer ids (a numeric `metadata.user_id`) are used as text."""
    sent = client_session(headers, body)
    if sent is not None:
        source, value = sent
        return _scoped(workspace_id, api_key_id, source, value), source
    digest = conversation_hash(body, api_key_id=api_key_id, model=model)
    return _scoped(workspace_id, api_key_id, "hash", digest), "hash"


def client_session(headers: Mapping[str, str], body: Mapping[str, Any]) -> tuple[str, str] | None:
    """(source, id) of the session id the client sent, first in detection order; None
    when it sent none. Also what the trace keeps for the request log's session filter."""
    for name in SESSION_HEADERS:
        value = _client_id(get_header(headers, name))
        if value is not None:
            return "header", value
    for source, path in BODY_FIELDS:
        value = _client_id(_at(body, path))
        if value is not None:
            return source, value
    return None


def conversation_hash(body: Mapping[str, Any], *, api_key_id: int, model: str) -> str:
    """sha256 (hex) of the canonical JSON of key id, model, tools and opening messages.

    Opening messages are those up to and including the first `user` message (all of them
    when there is none), so the system (or `developer`) prompts before it are part of them;
    each is [role, text]: text only, so `cache_control` markers that
    clients move from turn to turn, and image payloads, do not change the hash. A system
    message after the first user turn is not part of it (agents inject per-turn reminders
    there). Tools are hashed as sent, with sorted keys."""
    opening: list[list[str]] = []
    for message in iter_messages(body):
        role = message.get("role")
        opening.append([role if isinstance(role, str) else "", message_text(message)])
        if role == "user":
            break
    payload = {
        "api_key_id": api_key_id,
        "model": model,
        "tools": body.get("tools") or [],
        "opening": opening,
    }
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _at(body: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = body
    for step in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(step)
    return value


def _client_id(value: Any) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    text = value.strip() if isinstance(value, str) else ""
    if not text:
        return None
    if len(text) > MAX_ID_CHARS:
        return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
    return text


def _scoped(workspace_id: int, api_key_id: int, source: str, value: str) -> str:
    return f"{workspace_id}:{api_key_id}:{source}:{value}"
