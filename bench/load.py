"""The load generator: N closed-loop clients posting chat completions (or Anthropic
messages, `Target.api`) for a fixed window.

It shares two cores with the servers it measures, so every request costs as little
Python as possible: one aiohttp session and connector per run, the body encoded once,
no cookie jar, no decompression, and streams read as raw chunks (one `readany` per
network read, not one `readline` per SSE line), looking only for the first complete
`data:` line and the closing `data: [DONE]`.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

import aiohttp
import orjson
import uvloop

from bench.probe import Probe
from bench.results import CpuShare, Measurement

# One request may not take longer than this; a slower one counts as an error.
REQUEST_TIMEOUT_S = 30.0
# After the window closes, in-flight requests get this long before they are cancelled.
DRAIN_TIMEOUT_S = 10.0
# Distinct error descriptions kept per run, to print under the table.
MAX_ERROR_SAMPLES = 5
# Enough trailing bytes to hold `data: [DONE]` plus its blank-line terminator.
TAIL_BYTES = 32
DONE_LINE = b"data: [DONE]"
# How an Anthropic Messages stream ends (gateway/api/anthropic/stream.py).
MESSAGE_STOP_LINE = b'data: {"type":"message_stop"}'
ANTHROPIC_VERSION = "2023-06-01"
# Every reply is this many tokens: the fake's length without max_tokens (bench/run.py
# starts it so), and the Messages API's required max_tokens, which the fake honours — so
# both paths carry the same reply.
REPLY_TOKENS = 20
PROMPT = [{"role": "user", "content": "Say hello to the benchmark."}]


@dataclass(frozen=True, slots=True)
class Target:
    name: str  # "fake alone" | "direct" | "gateway"
    url: str  # the full /v1/chat/completions (or /v1/messages) URL
    model: str
    api_key: str
    # chat | messages (Anthropic's Messages API; native: to an Anthropic-style upstream) |
    # routed, governed (chat from other keys)
    api: str = "chat"


@dataclass(frozen=True, slots=True)
class Load:
    stream: bool
    concurrency: int
    warmup_s: float
    duration_s: float


@dataclass(frozen=True, slots=True)
class _Call:
    """The one request a run repeats, encoded once."""

    url: str
    body: bytes
    headers: Mapping[str, str]
    stream: bool
    last_line: bytes  # what a complete stream ends with


class BadStream(Exception):
    """A 200 stream that was not a complete SSE chat stream."""


@dataclass
class _Tally:
    """What the clients of one run write into; read once the run is over."""

    window_start: float
    window_end: float
    latencies_s: list[float] = field(default_factory=list)
    ttfbs_s: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    error_samples: list[str] = field(default_factory=list)
    sent: int = 0

    def error(self, kind: str, detail: str) -> None:
        self.errors[kind] += 1
        sample = f"{kind}: {detail[:300]}"
        if len(self.error_samples) < MAX_ERROR_SAMPLES and sample not in self.error_samples:
            self.error_samples.append(sample)


def run_load(target: Target, load: Load, probe: Probe) -> Measurement:
    """Drive `target` for warm-up + duration on a fresh uvloop loop; bounded in time."""
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        tally, cpu = runner.run(_drive(target, load, probe))
    return Measurement(
        target=target.name,
        api=target.api,
        stream=load.stream,
        concurrency=load.concurrency,
        window_s=load.duration_s,
        latencies_s=tally.latencies_s,
        ttfbs_s=tally.ttfbs_s,
        errors=dict(tally.errors),
        sent=tally.sent,
        upstream_calls=0,
        cpu=cpu,
        error_samples=tuple(tally.error_samples),
    )


async def _drive(target: Target, load: Load, probe: Probe) -> tuple[_Tally, CpuShare]:
    call = _call_of(target, load.stream)
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=load.concurrency),
        timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S),
        cookie_jar=aiohttp.DummyCookieJar(),
        auto_decompress=False,
    )
    async with session:
        started = time.perf_counter()
        tally = _Tally(started + load.warmup_s, started + load.warmup_s + load.duration_s)
        tasks = [
            asyncio.create_task(_client(session, call, tally)) for _ in range(load.concurrency)
        ]
        try:
            cpu = await _sample(tally, probe)
            _done, pending = await asyncio.wait(tasks, timeout=DRAIN_TIMEOUT_S)
            for _task in pending:
                tally.error("unfinished", f"still running {DRAIN_TIMEOUT_S:g} s after the window")
        finally:  # also on Ctrl-C: no client may outlive the session
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    return tally, cpu


def _call_of(target: Target, stream: bool) -> _Call:
    request = {"model": target.model, "messages": PROMPT, "stream": stream}
    if target.api in ("messages", "native"):
        headers = {"x-api-key": target.api_key, "anthropic-version": ANTHROPIC_VERSION}
        request["max_tokens"] = REPLY_TOKENS
        last_line = MESSAGE_STOP_LINE
    else:
        headers = {"Authorization": f"Bearer {target.api_key}"}
        last_line = DONE_LINE
    headers["Content-Type"] = "application/json"
    return _Call(target.url, orjson.dumps(request), headers, stream, last_line)


async def _client(session: aiohttp.ClientSession, call: _Call, tally: _Tally) -> None:
    """One closed-loop client: send, wait for the whole answer, repeat until the window ends.

    A request counts when it ends inside the window, so the warm-up's and the drain's
    requests add neither to the rate nor to the latencies; errors count whenever they occur.
    """
    perf = time.perf_counter
    url, body, headers, stream = call.url, call.body, call.headers, call.stream
    window_start, window_end = tally.window_start, tally.window_end
    latencies, ttfbs = tally.latencies_s, tally.ttfbs_s
    while (start := perf()) < window_end:
        tally.sent += 1
        try:
            async with session.post(url, data=body, headers=headers) as response:
                first = perf()  # the response head has arrived
                if response.status != 200:
                    detail = (await response.read()).decode("utf-8", "replace")
                    tally.error(f"HTTP {response.status}", detail)
                    continue
                if stream:
                    first = await _read_stream(response.content, call.last_line)
                else:
                    await response.read()
        except BadStream as exc:
            tally.error("bad stream", str(exc))
            continue
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            tally.error(type(exc).__name__, repr(exc))
            continue
        end = perf()
        if window_start <= end < window_end:
            latencies.append(end - start)
            ttfbs.append(first - start)


async def _read_stream(content: aiohttp.StreamReader, last_line: bytes) -> float:
    """Read a whole SSE stream; return when its first complete `data:` line had arrived.

    Raises BadStream when no data line came or the stream did not end with `last_line`
    (`[DONE]`, or a Messages stream's `message_stop`).
    """
    first = 0.0
    head = b""
    tail = b""
    async for chunk in content.iter_any():
        if not first:
            head += chunk
            at = head.find(b"data:")
            if at >= 0 and head.find(b"\n", at) >= 0:
                first = time.perf_counter()
                head = b""
        tail = chunk[-TAIL_BYTES:] if len(chunk) >= TAIL_BYTES else (tail + chunk)[-TAIL_BYTES:]
    if not first:
        raise BadStream(f"no data line; ends with {tail!r}")
    if not tail.rstrip().endswith(last_line):
        raise BadStream(f"does not end with {last_line!r}; ends with {tail!r}")
    return first


async def _sample(tally: _Tally, probe: Probe) -> CpuShare:
    """CPU seconds each role spent between the window's start and end, and the gateway's
    connections per worker at the end (all clients are connected by then)."""
    await asyncio.sleep(max(tally.window_start - time.perf_counter(), 0.0))
    before = probe.cpu_seconds()
    opened = time.perf_counter()
    await asyncio.sleep(max(tally.window_end - time.perf_counter(), 0.0))
    after = probe.cpu_seconds()
    elapsed_s = time.perf_counter() - opened
    spent = {role: after[role] - before[role] for role in after}
    return CpuShare(
        loadgen_s=spent["loadgen"],
        fake_s=spent["fake"],
        gateway_s=spent["gateway"],
        workers_s=tuple(spent[role] for role in sorted(spent) if role.startswith("worker ")),
        worker_connections=probe.worker_connections(),
        machine_busy_s=spent["machine"],
        machine_capacity_s=elapsed_s * probe.cpus,
        stores_s=spent["stores"],
    )
