"""The rolling-restart harness's load: requests at a steady rate for a fixed time, each
recorded with what the client saw of it — status, trace id, whether a stream ran to its
end. Open loop: a request starts at its scheduled time whatever the ones before it are
doing, so a replica that stalls shows as errors or slow answers, not as a quieter load."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from dataclasses import dataclass

import aiohttp
import orjson

REQUEST_TIMEOUT_S = 60.0
STREAM_EVERY = 4  # a quarter of the requests stream
SESSION_EVERY = 3  # a third carry a session id (X-Session-Id)


@dataclass(frozen=True, slots=True)
class Caller:
    name: str  # the key's name, sent as `user`: the fake adds up usage by it
    key: str
    model: str


@dataclass(frozen=True, slots=True)
class Outcome:
    caller: str
    stream: bool
    sent_s: float  # seconds after the load started
    took_s: float
    status: int  # 0: no HTTP answer at all
    trace_id: str
    complete: bool  # an answer with choices; a stream with a finish reason and [DONE]
    error: str
    code: str  # an error answer's `error.code` (budget_store_unavailable, ...)


async def run_load(
    url: str, callers: list[Caller], rate: float, stop: asyncio.Event
) -> list[Outcome]:
    """POST `url` (chat completions) `rate` times a second, round the callers, until `stop`
    is set; return once every request has ended."""
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        start = time.monotonic()
        tasks = []
        for n, caller in enumerate(itertools.cycle(callers)):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), start + n / rate - time.monotonic())
            if stop.is_set():
                break
            request = _request(n, caller)
            tasks.append(asyncio.create_task(_send(session, url, caller, request, start)))
        return list(await asyncio.gather(*tasks))


def _request(n: int, caller: Caller) -> tuple[dict[str, str], dict]:
    headers = {"Authorization": f"Bearer {caller.key}"}
    if n % SESSION_EVERY == 0:
        headers["X-Session-Id"] = f"rollout-session-{n % 30}"
    body: dict = {
        "model": caller.model,
        "messages": [{"role": "user", "content": f"request {n}: say something"}],
        "user": caller.name,
        "max_tokens": 40 + n % 20,
    }
    if n % STREAM_EVERY == 0:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    return headers, body


async def _send(
    session: aiohttp.ClientSession,
    url: str,
    caller: Caller,
    request: tuple[dict[str, str], dict],
    start: float,
) -> Outcome:
    headers, body = request
    stream = bool(body.get("stream"))
    sent = time.monotonic()
    status, trace_id, complete, error, code = 0, "", False, "", ""
    try:
        async with session.post(url, data=orjson.dumps(body), headers=headers) as response:
            status = response.status
            trace_id = response.headers.get("X-Switchyard-Trace-Id", "")
            raw = await response.read()
        if status != 200:
            error = f"HTTP {status}: {raw[:200].decode(errors='replace')}"
            code = _error_code(raw)
        else:
            complete = stream_complete(raw) if stream else bool(orjson.loads(raw)["choices"])
            error = "" if complete else "cut short"
    except (TimeoutError, aiohttp.ClientError, ValueError, KeyError) as exc:
        error = f"{type(exc).__name__}: {exc}"
    return Outcome(
        caller.name,
        stream,
        sent - start,
        time.monotonic() - sent,
        status,
        trace_id,
        complete,
        error,
        code,
    )


def _error_code(raw: bytes) -> str:
    try:
        return str(orjson.loads(raw)["error"]["code"])
    except (ValueError, KeyError, TypeError):
        return ""


def stream_complete(raw: bytes) -> bool:
    """A finish reason in some chunk, and `[DONE]` last."""
    events = [line[6:] for line in raw.split(b"\n") if line.startswith(b"data: ")]
    if not events or events[-1].strip() != b"[DONE]":
        return False
    chunks = [orjson.loads(event) for event in events[:-1]]
    return any(choice.get("finish_reason") for c in chunks for choice in c.get("choices", ()))
