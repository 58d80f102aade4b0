"""The OpenAI-compatible upstream adapter: translation only, no I/O.

Requests go out as the client sent them, minus Switchyard's own fields and with the
endpoint's upstream model id. Streams pass through frame by frame without a JSON round
trip: the only edit is a byte-level rewrite of the `model` value to the canonical slug
(SPEC R-API-6), and only frames that mention `usage` or `error` are parsed.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.upstream.streaming import SSEEvent, SSEParser

# Switchyard and OpenRouter-style fields that upstreams do not know.
GATEWAY_FIELDS = frozenset(
    {"models", "provider", "routing", "residency", "session_id", "preset", "transforms", "route"}
)


def build_request(
    body: dict[str, Any], upstream_model: str, api_key: str, *, stream: bool
) -> tuple[dict[str, str], bytes]:
    """Client body -> (headers, JSON bytes) for POST {base_url}/chat/completions."""
    payload = {k: v for k, v in body.items() if k not in GATEWAY_FIELDS}
    payload["model"] = upstream_model
    if stream:
        # Usage is needed for cost accounting even when the client did not ask for it.
        payload["stream_options"] = {**(payload.get("stream_options") or {}), "include_usage": True}
    headers = {"authorization": f"Bearer {api_key}", "content-type": "application/json"}
    return headers, compact_json(payload)


def compact_json(payload: dict[str, Any]) -> bytes:
    """`orjson.dumps`, copied into a bytes object of its own size: orjson's result keeps
    the capacity of its write buffer (4 KiB and up), which a stream holds for its whole
    life — 6 % of a waiting stream's memory (docs/performance.md)."""
    return bytes(memoryview(orjson.dumps(payload)))


def build_embeddings_request(
    body: dict[str, Any], upstream_model: str, api_key: str
) -> tuple[dict[str, str], bytes]:
    payload = {k: v for k, v in body.items() if k not in GATEWAY_FIELDS}
    payload["model"] = upstream_model
    headers = {"authorization": f"Bearer {api_key}", "content-type": "application/json"}
    return headers, orjson.dumps(payload)


def parse_response(data: bytes, *, model: str) -> dict[str, Any]:
    """Upstream chat completion JSON -> response dict with `model` set to the canonical
    slug. Raises ValueError when it is not a chat completion (check_completion)."""
    parsed = _json_object(data)
    check_completion(parsed)
    parsed["model"] = model
    return parsed


def parse_embeddings(data: bytes, *, model: str) -> dict[str, Any]:
    """Upstream embeddings JSON -> response dict with `model` set to the canonical slug.
    Raises ValueError when it holds no embeddings (check_embeddings)."""
    parsed = _json_object(data)
    check_embeddings(parsed)
    parsed["model"] = model
    return parsed


def _json_object(data: bytes) -> dict[str, Any]:
    parsed = orjson.loads(data)
    if not isinstance(parsed, dict):
        raise ValueError("upstream response is not a JSON object")
    return parsed


# The least shape of an answer (SPEC D-18): what a client reads without checking — the
# SDKs index `choices[0].message` and `data[i].embedding`. Anything short of it is a
# malformed answer, the endpoint's fault: the next endpoint is tried.


def check_completion(answer: dict[str, Any]) -> None:
    """Raises ValueError unless `answer` has choices, each with a message."""
    choices = answer.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ValueError("upstream chat completion has no choices")
    if not all(isinstance(c, dict) and isinstance(c.get("message"), dict) for c in choices):
        raise ValueError("upstream chat completion has a choice without a message")


def check_embeddings(answer: dict[str, Any]) -> None:
    """Raises ValueError unless `answer` has data, each item with an embedding (a list of
    floats, or a base64 string)."""
    data = answer.get("data")
    if not isinstance(data, list) or not data:
        raise ValueError("upstream embeddings answer has no data")
    if not all(isinstance(d, dict) and isinstance(d.get("embedding"), list | str) for d in data):
        raise ValueError("upstream embeddings answer has an item without an embedding")


def is_chunk(payload: object) -> bool:
    """Whether a stream frame's JSON is a `chat.completion.chunk`: an object with a
    `choices` list (empty in the usage chunk)."""
    return isinstance(payload, dict) and isinstance(payload.get("choices"), list)


def parse_error(status: int, data: bytes) -> tuple[str, str]:
    """Upstream error body -> (type, message); tolerant of HTML and empty bodies."""
    try:
        error = orjson.loads(data).get("error") or {}
        if isinstance(error, dict):
            return str(error.get("type") or "upstream_error"), str(error.get("message") or "")
        return "upstream_error", str(error)
    except (orjson.JSONDecodeError, AttributeError):
        return "upstream_error", f"HTTP {status} from upstream"


TEXT_FIELDS = (b'"content":"', b'"arguments":"')


def _text_length(data: bytes) -> int:
    """The length of a chunk's text strings (content, tool-call arguments) as sent, escapes
    counted as written: found with `find`, not by parsing every frame of every stream."""
    total = 0
    for field in TEXT_FIELDS:
        start = data.find(field)
        while start >= 0:
            begin = end = start + len(field)
            while (end := data.find(b'"', end)) > 0 and data[end - 1] == 0x5C:  # \"
                end += 1
            if end < 0:
                break
            total += end - begin
            start = data.find(field, end)
    return total


def _json_or_none(data: bytes) -> object:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


class StreamTranslator:
    """Pass-through of OpenAI SSE frames, watching for usage, errors and the end."""

    def __init__(self, *, model: str, upstream_model: str) -> None:
        self._parser = SSEParser()
        self._rewrites: tuple[tuple[bytes, bytes], ...] = ()
        if upstream_model != model:
            old, new = orjson.dumps(upstream_model), orjson.dumps(model)
            self._rewrites = (
                (b'"model":' + old, b'"model":' + new),
                (b'"model": ' + old, b'"model": ' + new),
            )
        self.usage: dict[str, Any] | None = None
        self.finished = False
        self.error: tuple[str, str] | None = None
        self.error_code: object = None  # the in-band error's `code` (a status, or a name)
        self.emitted_content = False
        # Characters of text forwarded: what a stream without usage is charged by (D-28).
        self.streamed_chars = 0
        # The upstream's chunk id and created time, read from its first chunk, so the
        # gateway's own last chunk (the switchyard block) carries the same ones.
        self.chunk_id: str | None = None
        self.created: int | None = None

    def feed(self, chunk: bytes) -> list[bytes]:
        frames: list[bytes] = []
        for event in self.accept(chunk):
            raw = event.raw
            for old, new in self._rewrites:
                raw = raw.replace(old, new)
            frames.append(raw)
        return frames

    def accept(self, chunk: bytes) -> list[SSEEvent]:
        """The upstream's events to forward, as parsed (for a client that gets them in
        another API's shape), with this translator's state updated as `feed`'s is."""
        accepted: list[SSEEvent] = []
        for event in self._parser.feed(chunk):
            if event.is_done:
                self.finished = True
                continue
            data = event.data
            # Before the commit point every frame is read whole: an error frame fails the
            # attempt, and so does one that is not a chunk (D-18); after it, pass-through.
            first = None if self.emitted_content else _json_or_none(data)
            if not self.emitted_content and first is None:
                self.error = ("malformed_response", "upstream sent a malformed stream frame")
                continue
            if (b'"error"' in data or b'"usage"' in data) and self._inspect(data):
                continue
            if not self.emitted_content and not is_chunk(first):
                self.error = ("malformed_response", "upstream sent a frame that is not a chunk")
                continue
            accepted.append(event)
            self.streamed_chars += _text_length(data)
            if not self.emitted_content:
                self._remember_ids(data)
            self.emitted_content = True
        return accepted

    def _remember_ids(self, data: bytes) -> None:
        try:
            payload = orjson.loads(data)
        except orjson.JSONDecodeError:
            return
        if isinstance(payload, dict):
            if isinstance(payload.get("id"), str):
                self.chunk_id = payload["id"]
            if isinstance(payload.get("created"), int):
                self.created = payload["created"]

    def _inspect(self, data: bytes) -> bool:
        """Record usage or an in-band error; True when the frame must not be forwarded."""
        try:
            payload = orjson.loads(data)
        except orjson.JSONDecodeError:
            return False
        if not isinstance(payload, dict):
            return False
        if payload.get("error"):
            error = payload["error"]
            if isinstance(error, dict):
                self.error = (str(error.get("type") or "upstream_error"), str(error.get("message")))
                self.error_code = error.get("code", error.get("status"))
            else:
                self.error = ("upstream_error", str(error))
            return True
        if payload.get("usage"):
            self.usage = payload["usage"]
        return False
