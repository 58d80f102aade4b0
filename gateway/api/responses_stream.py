"""Streaming for `POST /v1/responses`: the chat path's OpenAI chunk frames re-shaped into
Responses API events (`response.created` … `response.output_text.delta` …
`response.completed`). Text is streamed as it arrives; function calls are assembled and
emitted whole when the chat stream finishes."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson

from gateway.streaming import SSEParser, frame_json


class ResponsesStream:
    def __init__(self, *, response_id: str, message_id: str, created: int, model: str) -> None:
        self.response_id = response_id
        self.message_id = message_id
        self.created = created
        self.model = model
        self.sequence = 0
        self.text: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.usage: dict[str, Any] = {}
        self.finish_reason: str | None = None
        self.switchyard: dict[str, Any] | None = None
        self.text_started = False

    def _event(self, kind: str, **fields: Any) -> bytes:
        self.sequence += 1
        return frame_json({"type": kind, "sequence_number": self.sequence, **fields}, event=kind)

    def _response(self, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
        usage = self.usage
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        body: dict[str, Any] = {
            "id": self.response_id, "object": "response", "created_at": self.created,
            "status": status, "model": self.model, "output": output,
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "usage": {
                "input_tokens": usage.get("prompt_tokens", 0),
                "input_tokens_details": {"cached_tokens": cached},
                "output_tokens": usage.get("completion_tokens", 0),
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": usage.get("total_tokens", 0),
            } if usage else None,
        }  # fmt: skip
        if self.switchyard is not None:
            body["switchyard"] = self.switchyard
        return body

    def opening(self) -> list[bytes]:
        return [self._event("response.created", response=self._response("in_progress", []))]

    def feed(self, payload: dict[str, Any]) -> list[bytes]:
        """One chat.completion.chunk -> Responses events."""
        if payload.get("usage"):
            self.usage = payload["usage"]
        if payload.get("switchyard"):
            self.switchyard = payload["switchyard"]
        out: list[bytes] = []
        for choice in payload.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                out.extend(self._text_delta(delta["content"]))
            for call in delta.get("tool_calls") or []:
                slot = self.calls.setdefault(
                    call.get("index", 0), {"id": "", "name": "", "args": ""}
                )
                function = call.get("function") or {}
                slot["id"] = call.get("id") or slot["id"]
                slot["name"] += function.get("name") or ""
                slot["args"] += function.get("arguments") or ""
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return out

    def _text_delta(self, text: str) -> list[bytes]:
        out = []
        if not self.text_started:
            self.text_started = True
            item = {"type": "message", "id": self.message_id, "status": "in_progress",
                    "role": "assistant", "content": []}  # fmt: skip
            out.append(self._event("response.output_item.added", output_index=0, item=item))
            part = {"type": "output_text", "text": "", "annotations": []}
            out.append(self._event("response.content_part.added", item_id=self.message_id,
                                   output_index=0, content_index=0, part=part))  # fmt: skip
        self.text.append(text)
        out.append(self._event("response.output_text.delta", item_id=self.message_id,
                               output_index=0, content_index=0, delta=text))  # fmt: skip
        return out

    def closing(self) -> list[bytes]:
        out: list[bytes] = []
        output: list[dict[str, Any]] = []
        if self.text_started:
            text = "".join(self.text)
            part = {"type": "output_text", "text": text, "annotations": []}
            message = {"type": "message", "id": self.message_id, "status": "completed",
                       "role": "assistant", "content": [part]}  # fmt: skip
            ids = {"item_id": self.message_id, "output_index": 0, "content_index": 0}
            out.append(self._event("response.output_text.done", **ids, text=text))
            out.append(self._event("response.content_part.done", **ids, part=part))
            out.append(self._event("response.output_item.done", output_index=0, item=message))
            output.append(message)
        for slot in self.calls.values():
            item = {
                "type": "function_call",
                "id": f"fc_{slot['id']}",
                "call_id": slot["id"],
                "name": slot["name"],
                "arguments": slot["args"],
                "status": "completed",
            }
            index = len(output)
            out.append(self._event("response.output_item.added", output_index=index, item=item))
            out.append(self._event("response.output_item.done", output_index=index, item=item))
            output.append(item)
        status = "incomplete" if self.finish_reason == "length" else "completed"
        out.append(self._event(f"response.{status}", response=self._response(status, output)))
        return out


async def translate(
    frames: AsyncIterator[bytes], stream: ResponsesStream, on_error: Callable[[bytes], bytes]
) -> AsyncIterator[bytes]:
    """Chat SSE bytes in, Responses SSE bytes out. An error event ends the stream as an
    `error` event; `[DONE]` becomes `response.completed`. The chat frames are read to
    their end (so the relay records its outcome as it ends) and closed with this
    generator when the client leaves."""
    parser = SSEParser()
    for frame in stream.opening():
        yield frame
    ended = False
    async with contextlib.aclosing(frames):  # type: ignore[type-var]
        async for chunk in frames:
            for event in parser.feed(chunk):
                if ended:
                    continue
                if event.is_done:
                    ended = True
                    for frame in stream.closing():
                        yield frame
                    continue
                payload = orjson.loads(event.data)
                if "error" in payload:
                    ended = True
                    yield on_error(event.data)
                    continue
                translated = stream.feed(payload)
                if translated:
                    yield b"".join(translated)
