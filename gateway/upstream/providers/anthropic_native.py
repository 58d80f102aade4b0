"""A Messages API request (`POST /v1/messages`, SPEC R-API-9) sent to an Anthropic-style
upstream as the client wrote it: no translation to chat and back, so what only Anthropic
reads — `cache_control` on blocks, tools and the request, `top_k`, the `thinking` blocks
of earlier turns that a tool loop with extended thinking must send back, beta fields with
their `anthropic-beta` header — reaches the upstream. Only the model is replaced (by the
endpoint's upstream model), Switchyard's own fields are taken out, and a preset's
defaults are filled where the request is silent, as on the chat path (R-PRE-1).

The answer comes back as sent, too: `parse_message` keeps the upstream's message beside
its chat reading (usage for the cost, the shape checked), and `NativeStream` relays the
upstream's events, watching for usage, the commit point, an error and the end. Pure: no
network, no Django, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from gateway.upstream.providers.anthropic import API_VERSION
from gateway.upstream.providers.anthropic_stream import openai_usage, parse_response
from gateway.upstream.streaming import SSEParser, frame_json

JSONObject = dict[str, Any]

# Not sent upstream: Switchyard's routing fields, and fields about the client's own Anthropic
# account (billing, workspace) or Anthropic's own fallbacks, which Switchyard's replace.
# `inference_geo` reaches here only as "global" (anything else is refused at parse).
NOT_SENT = frozenset(
    {
        "models",
        "provider",
        "routing",
        "residency",
        "session_id",
        "workspace_id",
        "billing_policy",
        "fallback_credit_token",
        "user_profile_id",
        "fallbacks",
        "inference_geo",
    }
)
# Client headers an Anthropic upstream reads: the betas a request's fields may need.
FORWARDED_HEADERS = ("anthropic-beta",)
# A preset's default parameters (chat's names) that a Messages request can take, by its name.
_DEFAULT_PARAMS = {
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "stop": "stop_sequences",
}


@dataclass(frozen=True, slots=True)
class NativeRequest:
    """The body and headers an Anthropic-style upstream gets, less the model and stream,
    and the id the gateway gives the answer's message."""

    body: JSONObject
    headers: Mapping[str, str]
    message_id: str


def native_request(
    body: Mapping[str, Any],
    client_headers: Mapping[str, str],
    *,
    message_id: str,
    default_prompt: str = "",
    default_params: Mapping[str, Any] | None = None,
) -> NativeRequest:
    """The client's Messages body for Anthropic-style upstreams, with a preset's defaults
    (`default_prompt` as `system`, `default_params` by their Messages names) where the
    request is silent. A default Messages cannot express (chat's `presence_penalty`) is
    not sent: a default is a preference, not a requirement."""
    sent = {name: value for name, value in body.items() if name not in NOT_SENT}
    if default_prompt and not sent.get("system"):
        sent["system"] = default_prompt
    for chat_name, value in (default_params or {}).items():
        name = _DEFAULT_PARAMS.get(chat_name)
        if name is not None and sent.get(name) is None:
            sent[name] = [value] if name == "stop_sequences" and isinstance(value, str) else value
    headers = {name: client_headers[name] for name in FORWARDED_HEADERS if client_headers.get(name)}
    return NativeRequest(sent, headers, message_id)


def build_request(
    native: NativeRequest, upstream_model: str, api_key: str, *, stream: bool
) -> tuple[dict[str, str], bytes]:
    """(headers, JSON bytes) for POST {base_url}/messages."""
    headers = {
        **native.headers,
        "x-api-key": api_key,
        "anthropic-version": API_VERSION,
        "content-type": "application/json",
    }
    payload = {**native.body, "model": upstream_model, "stream": stream}
    return headers, orjson.dumps(payload)


def parse_message(
    data: bytes, *, model: str, completion_id: str, created: int
) -> tuple[JSONObject, JSONObject]:
    """(the answer read as a chat completion, the message as the upstream sent it). The chat
    reading checks the shape (anthropic_stream.check_message) and carries the usage the
    cost is settled by. Raises ValueError (orjson.JSONDecodeError) when the body is not a
    message."""
    chat = parse_response(data, model=model, completion_id=completion_id, created=created)
    return chat, orjson.loads(data)


class NativeStream:
    """An Anthropic-style upstream's event stream, relayed as it came. The gateway reads:
    `emitted_content` (a content delta arrived: the answer is committed), `finished`
    (`message_stop`), `error` ((type, message) of an `error` event, which is not relayed:
    the gateway ends the stream with its own, scrubbed), `usage` (OpenAI-shaped, for the
    cost) and `streamed_chars` (what a stream without usage is charged by, SPEC D-28).
    `message_start` is re-sent with the gateway's message id and the model's slug, as a
    translated stream reports them."""

    def __init__(self, *, message_id: str, model: str) -> None:
        self._parser = SSEParser()
        self._message_id = message_id
        self._model = model
        self._usage: JSONObject | None = None
        self.finished = False
        self.error: tuple[str, str] | None = None
        self.emitted_content = False
        self.streamed_chars = 0

    @property
    def usage(self) -> JSONObject | None:
        return None if self._usage is None else openai_usage(self._usage)

    def feed(self, chunk: bytes) -> list[bytes]:
        frames: list[bytes] = []
        for event in self._parser.feed(chunk):
            try:
                payload = orjson.loads(event.data)
            except orjson.JSONDecodeError:
                payload = None
            if not isinstance(payload, dict):
                self.error = (
                    "api_error",
                    f"upstream sent a {event.event or 'stream'} event that is not a JSON object",
                )
                return frames
            frame = self._relay(payload, event.raw)
            if self.error is not None:
                return frames
            if frame is not None:
                frames.append(frame)
        return frames

    def _relay(self, payload: JSONObject, raw: bytes) -> bytes | None:
        match payload.get("type"):
            case "message_start":
                message = payload.get("message")
                if isinstance(message, dict):
                    self._merge_usage(message.get("usage"))
                    message = {**message, "id": self._message_id, "model": self._model}
                    return frame_json({**payload, "message": message}, event="message_start")
            case "content_block_delta":
                self.emitted_content = True
                self.streamed_chars += _delta_chars(payload.get("delta"))
            case "message_delta":
                self._merge_usage(payload.get("usage"))
            case "message_stop":
                self.finished = True
            case "error":
                error = payload.get("error")
                error = error if isinstance(error, dict) else {}
                self.error = (
                    str(error.get("type") or "api_error"),
                    str(error.get("message") or "upstream stream error"),
                )
                return None
        return raw

    def closing(self) -> list[bytes]:
        """Events after the upstream's own: none, its `message_stop` ended the message."""
        return []

    def _merge_usage(self, usage: Any) -> None:
        if isinstance(usage, dict):
            counts = {k: v for k, v in usage.items() if isinstance(v, int) and v >= 0}
            self._usage = {**(self._usage or {}), **counts}


def _delta_chars(delta: Any) -> int:
    if not isinstance(delta, dict):
        return 0
    for name in ("text", "partial_json", "thinking"):
        value = delta.get(name)
        if isinstance(value, str):
            return len(value)
    return 0
