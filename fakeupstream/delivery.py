"""Sending a /v1 answer the way the profile and the request's fault say: errors in the
right provider shape, added latency, stream pacing, and the broken answers (hang,
disconnect, truncated or malformed bodies, in-band error events).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import orjson

from fakeupstream import anthropic_wire, openai_wire
from fakeupstream.connection import Connection, Request
from fakeupstream.faults import Fault, FaultKind, draw_error_status, parse_fault
from fakeupstream.replies import StreamPlan
from fakeupstream.state import ServerState

JSON = "application/json"
SSE_HEADERS = (("cache-control", "no-cache"),)
# What `malformed` sends: starts like JSON, then bytes no JSON (or UTF-8) parser accepts.
MALFORMED_JSON = b'{"id": "fake", "choices": [\x00\xff\xfe'
MALFORMED_EVENT = b'data: {"id": "fake", "choices": [{"delta": \xff\xfe not json\n\n'
# What `no_answer` leaves out of a reply: the answer itself (chat, embeddings, messages,
# count_tokens), so the rest (id, object, model, usage) still looks like a real answer.
ANSWER_FIELDS = ("choices", "data", "content", "input_tokens")


_IN_BAND_MESSAGES = {
    400: "This model's maximum context length is 8192 tokens.",
    429: "Rate limit reached.",
    500: "The server had an error while processing your request.",
    529: "Overloaded",
}


def prompt_text(body: Any) -> str:
    """All message text of a chat or messages body, joined (what echo mode quotes)."""
    if not isinstance(body, dict):
        return ""
    texts: list[str] = []
    if isinstance(body.get("system"), str):
        texts.append(body["system"])
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(
                p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
            )
    return " ".join(texts)


class BadRequest(ValueError):
    """The request is not what the endpoint accepts; answered 400 with this message."""


class ApiStyle(StrEnum):
    OPENAI = "openai"
    ANTHROPIC = "anthropic"


@dataclass(slots=True)
class Exchange:
    """One /v1 request being answered."""

    request: Request
    conn: Connection
    state: ServerState
    style: ApiStyle
    body: Any = None  # the parsed JSON body
    fault: Fault | None = None

    def send_error(self, status: int, message: str) -> None:
        """An error response in the provider's shape; 429 carries Retry-After, a 3xx a
        Location. In echo mode the message, a header and the Retry-After carry the
        credential and the prompt back, as careless real providers do."""
        echo = self.echo()
        if echo:
            message = f"{message} {echo}"
        if self.style is ApiStyle.ANTHROPIC:
            body = anthropic_wire.error_body(status, message)
        else:
            body = openai_wire.error_body(status, message)
        headers: list[tuple[str, str]] = []
        if status == 429:
            retry_after = self.credential() if echo else str(self.state.settings.retry_after_s)
            headers.append(("retry-after", retry_after))
        if 300 <= status < 400:
            headers.append(("location", "http://127.0.0.1:9/elsewhere"))
        if echo:
            headers.append(("x-echo", self.credential()))
        self.conn.respond(status, JSON, body, headers)

    def in_band_error(self) -> dict[str, Any]:
        """The error a provider reports inside an HTTP 200 answer: of the fault's status
        when it names one (`error_event:400`), else an overload / server error."""
        status = self.fault.arg if self.fault and self.fault.arg else None
        echo = self.echo()
        if self.style is ApiStyle.ANTHROPIC:
            message = _IN_BAND_MESSAGES.get(status or 529, "Overloaded")
            return anthropic_wire.error_payload(status or 529, f"{message} {echo}".strip())
        message = _IN_BAND_MESSAGES.get(status or 500, "The request failed.")
        return openai_wire.error_payload(status or 500, f"{message} {echo}".strip())

    def credential(self) -> str:
        headers = self.request.headers
        authorization = headers.get("authorization", "")
        return headers.get("x-api-key") or authorization.partition(" ")[2].strip()

    def echo(self) -> str:
        """In echo mode (`POST /_fake/echo`), the sentence that gives the credential and
        the prompt back; '' otherwise."""
        if not self.state.echo:
            return ""
        try:
            body = self.body if self.body is not None else orjson.loads(self.request.body)
        except orjson.JSONDecodeError:
            body = None
        prompt = prompt_text(body)
        return f"Incorrect API key provided: {self.credential()}. Your messages: {prompt}"

    def error_event(self) -> bytes:
        """The in-band error as the stream event of the provider's style."""
        if self.style is ApiStyle.ANTHROPIC:
            return anthropic_wire.event("error", self.in_band_error())
        return openai_wire.sse(self.in_band_error())


async def answer_early_fault(ex: Exchange) -> bool:
    """Run the faults that come before any reply is built; True when the request is done.

    `latency` waits and lets the request continue; the later faults are left to
    `send_json` / `send_stream`.
    """
    fault = ex.fault = choose_fault(ex)
    if fault is None:
        return False
    if fault.kind is FaultKind.STATUS:
        assert fault.arg is not None
        ex.send_error(fault.arg, f"Injected fault: status {fault.arg}")
        return True
    if fault.kind is FaultKind.HANG:
        # Never resolved: the connection cancels this task when the client goes away.
        await asyncio.get_running_loop().create_future()
        return True
    if fault.kind is FaultKind.HOLD:
        await ex.state.released.wait()
        return False
    if fault.kind is FaultKind.DISCONNECT:
        ex.conn.close()
        return True
    if fault.kind is FaultKind.LATENCY:
        await _sleep_ms(fault.arg or 0)
    return False


def choose_fault(ex: Exchange) -> Fault | None:
    """The request's `X-Fake-Fault` header, else the script's next fault, else one
    seeded error-rate draw. A request carrying the header does not consume the script.
    """
    header = ex.request.headers.get("x-fake-fault")
    if header:
        try:
            return parse_fault(header)
        except ValueError as exc:
            raise BadRequest(f"X-Fake-Fault: {exc}") from None
    scripted = ex.state.script.take()
    if scripted is not None:
        return scripted
    status = draw_error_status(ex.state.rng, ex.state.settings.error_rate)
    return None if status is None else Fault(FaultKind.STATUS, status)


async def send_json(ex: Exchange, body: bytes) -> None:
    """A non-stream reply after the profile's latency, or its faulty variant."""
    conn, kind = ex.conn, ex.fault.kind if ex.fault else None
    await _sleep_ms(ex.state.settings.latency_ms)
    if kind is FaultKind.MALFORMED:
        conn.respond(200, JSON, MALFORMED_JSON)
    elif kind is FaultKind.DROP_MID_STREAM:
        conn.send_head(200, JSON, len(body))
        conn.write(body[: len(body) // 2])
        conn.close()
    elif kind is FaultKind.ERROR_EVENT:
        # The non-stream form of an in-band error: HTTP 200 whose body is an error.
        conn.respond(200, JSON, orjson.dumps(ex.in_band_error()))
    elif kind is FaultKind.NO_ANSWER:
        reply = orjson.loads(body)
        conn.respond(
            200, JSON, orjson.dumps({k: v for k, v in reply.items() if k not in ANSWER_FIELDS})
        )
    else:
        conn.respond(200, JSON, body)


async def send_stream(ex: Exchange, plan: StreamPlan) -> None:
    """Stream the plan: head at once, the first token after ttft, then paced tokens.

    The lead events go out with the first token, so the first body byte marks the time
    to first token for both API styles. `drop_mid_stream:N` closes the socket after N
    token events, before the tail (no `[DONE]` / `message_stop`).
    """
    conn, fault = ex.conn, ex.fault
    kind = fault.kind if fault else None
    conn.send_head(200, "text/event-stream", None, SSE_HEADERS)
    if kind is FaultKind.MALFORMED or kind is FaultKind.ERROR_EVENT:
        conn.end_chunks(MALFORMED_EVENT if kind is FaultKind.MALFORMED else ex.error_event())
        return
    if kind is FaultKind.NO_ANSWER:
        conn.end_chunks(_answerless(ex.style, plan))
        return
    token_limit = fault.arg if fault and kind is FaultKind.DROP_MID_STREAM else None
    await _stream_tokens(ex, plan, token_limit)
    if token_limit is not None and token_limit <= len(plan.tokens):
        conn.close()
        return
    conn.end_chunks(b"".join(plan.tail))


def _answerless(style: ApiStyle, plan: StreamPlan) -> bytes:
    """The stream of `no_answer`: its opening and its end, nothing between. OpenAI style:
    the first chunk without `choices`, then `[DONE]`; Anthropic style: `message_start`,
    then `message_stop`, with no content block."""
    if style is ApiStyle.ANTHROPIC:
        return plan.lead[0] + plan.tail[-1]
    first = orjson.loads((plan.lead or plan.tokens)[0].removeprefix(b"data: "))
    return openai_wire.sse({k: v for k, v in first.items() if k != "choices"}) + plan.tail[-1]


async def _stream_tokens(ex: Exchange, plan: StreamPlan, token_limit: int | None) -> None:
    """Write lead + tokens (at most token_limit of them), each token in its own chunk."""
    settings, conn = ex.state.settings, ex.conn
    tokens = plan.tokens if token_limit is None else plan.tokens[:token_limit]
    if token_limit == 0:
        return
    if settings.ttft_ms > 0:
        conn.flush()  # the head goes out now; the first token after ttft
        await _sleep_ms(settings.ttft_ms)
    loop = asyncio.get_running_loop()
    first_at = loop.time()
    interval_s = 1.0 / settings.tokens_per_s if settings.tokens_per_s > 0 else 0.0
    conn.write_chunk(b"".join(plan.lead) + (tokens[0] if tokens else b""))
    for index, token in enumerate(tokens[1:], start=1):
        if interval_s:
            # Scheduled from the first token, so sleep overshoot does not add up.
            await asyncio.sleep(max(first_at + index * interval_s - loop.time(), 0.0))
        await conn.drain()
        conn.write_chunk(token)


async def _sleep_ms(duration_ms: float) -> None:
    if duration_ms > 0:
        await asyncio.sleep(duration_ms / 1000)
