"""`python -m bench.unknown_keys [--duration S] [--concurrency N] [--workers N] [--server ...]`:
a flood of well-formed random workspace keys, every one a 401 (docs/performance.md,
"Unknown-key flood").

A key the worker's snapshot lacks is looked up in the database, rationed
(gateway/state/key_lookups.py), so a key made since the last poll works at once; this
measures what that costs when every key is unknown: the rate of 401s, their latency, and
the gateway's CPU per request, at one concurrency, after one second of warm-up.

A throw-away database and catalog (bench/stack.py), the fake upstream the catalog needs
(it sees no request), the gateway, and closed-loop aiohttp clients, each request with a
key of its own. Any answer but a 401 `invalid_api_key` is an error. All traffic goes to
127.0.0.1; every process started is stopped on the way out.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import statistics
import string
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import orjson
import uvloop

from bench.load import PROMPT, REPLY_TOKENS, REQUEST_TIMEOUT_S
from bench.procs import (
    ProcessTree,
    cpu_seconds,
    kill_all_leftovers,
    progress,
    wait_for_idle_workers,
    wait_for_quiet_machine,
)
from bench.stack import GATEWAY_MODEL, bench_env, prepare_database
from fakeupstream.process import running_fake_upstream
from gateway.processes import DEFAULT_SERVER, ROOT, SERVERS, running_gateway
from workspaces.keys import KEY_PREFIX, LOOKUP_ID_CHARS

GATEWAY_LOG = ROOT / "var" / "bench-unknown-keys-gateway.log"
WARMUP_S = 1.0
MAX_DURATION_S = 60.0  # bounded, so that a typo cannot keep two cores busy for long
QUIET_BUSY_PCT = 15.0
QUIET_WAIT_S = 30.0
_ALPHANUMERIC = string.ascii_letters + string.digits


@dataclass(frozen=True, slots=True)
class FloodResult:
    concurrency: int
    window_s: float
    latencies_s: Sequence[float]  # 401s that ended inside the window
    errors: Counter[str]  # anything else, by kind
    gateway_cpu_s: float  # all the gateway's processes, over the window

    @property
    def rate_per_s(self) -> float:
        return len(self.latencies_s) / self.window_s

    def percentile_ms(self, q: int) -> float:
        if len(self.latencies_s) < 2:
            return 0.0
        return statistics.quantiles(self.latencies_s, n=100)[q - 1] * 1000

    @property
    def cpu_us_per_request(self) -> float:
        done = len(self.latencies_s)
        return self.gateway_cpu_s / done * 1e6 if done else 0.0


def random_key() -> str:
    """A key of the right shape that no workspace has."""
    lookup = "".join(secrets.choice(_ALPHANUMERIC) for _ in range(LOOKUP_ID_CHARS))
    return f"{KEY_PREFIX}{lookup}-{secrets.token_urlsafe(32)}"


async def _flood(url: str, concurrency: int, duration_s: float, tree: ProcessTree) -> FloodResult:
    body = orjson.dumps({"model": GATEWAY_MODEL, "messages": PROMPT})
    started = time.perf_counter()
    window_start, window_end = started + WARMUP_S, started + WARMUP_S + duration_s
    latencies: list[float] = []
    errors: Counter[str] = Counter()

    async def client(session: aiohttp.ClientSession) -> None:
        while (start := time.perf_counter()) < window_end:
            headers = {
                "Authorization": f"Bearer {random_key()}",
                "Content-Type": "application/json",
            }
            try:
                async with session.post(url, data=body, headers=headers) as response:
                    answer = await response.read()
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                errors[type(exc).__name__] += 1
                continue
            if response.status != 401 or b"invalid_api_key" not in answer:
                errors[f"HTTP {response.status}"] += 1
                continue
            end = time.perf_counter()
            if window_start <= end < window_end:
                latencies.append(end - start)

    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=concurrency),
        timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S),
        cookie_jar=aiohttp.DummyCookieJar(),
    )
    async with session:
        tasks = [asyncio.create_task(client(session)) for _ in range(concurrency)]
        await asyncio.sleep(max(window_start - time.perf_counter(), 0.0))
        before = sum(cpu_seconds(pid) for pid in tree.all_pids)
        await asyncio.sleep(max(window_end - time.perf_counter(), 0.0))
        after = sum(cpu_seconds(pid) for pid in tree.all_pids)
        await asyncio.gather(*tasks)
    return FloodResult(concurrency, duration_s, latencies, errors, after - before)


def run(duration_s: float, concurrency: int, workers: int, server: str) -> FloodResult:
    busy_pct = wait_for_quiet_machine(QUIET_BUSY_PCT, QUIET_WAIT_S)
    if busy_pct >= QUIET_BUSY_PCT:
        progress(f"the machine is still busy ({busy_pct:.0f} % of a core); running anyway")
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sy-bench-")))
        fake = stack.enter_context(running_fake_upstream("fast", reply_tokens=REPLY_TOKENS))
        env = bench_env(workdir / "bench.sqlite3", "aiohttp")
        prepare_database(env, fake.base_url, workdir)
        GATEWAY_LOG.parent.mkdir(exist_ok=True)
        GATEWAY_LOG.write_bytes(b"")
        trees: list[ProcessTree] = []
        stack.callback(kill_all_leftovers, trees)  # registered first: runs after the stop
        gateway = stack.enter_context(
            running_gateway(env, workers=workers, server=server, log_path=GATEWAY_LOG)
        )
        trees.append(wait_for_idle_workers(gateway.process.pid, workers))
        progress(f"gateway ({server}, {workers} workers) on {gateway.base_url}")
        url = f"{gateway.base_url}/chat/completions"
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(_flood(url, concurrency, duration_s, trees[0]))


def render(result: FloodResult) -> str:
    errors = ", ".join(f"{kind}: {n}" for kind, n in result.errors.items()) or "none"
    return "\n".join(
        [
            "| scenario | c | 401/s | p50 ms | p99 ms | gateway CPU µs/request | errors |",
            "| --- | --- | --- | --- | --- | --- | --- |",
            f"| unknown-key flood | {result.concurrency} | {result.rate_per_s:.0f} |"
            f" {result.percentile_ms(50):.2f} | {result.percentile_ms(99):.2f} |"
            f" {result.cpu_us_per_request:.0f} | {errors} |",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.unknown_keys", description=__doc__)
    parser.add_argument("--duration", type=float, default=5.0, help="measured seconds (5)")
    parser.add_argument("--concurrency", type=int, default=64, help="clients (64)")
    parser.add_argument("--workers", type=int, default=2, help="gateway workers (2)")
    parser.add_argument("--server", choices=SERVERS, default=DEFAULT_SERVER)
    args = parser.parse_args(argv)
    if not 0 < args.duration <= MAX_DURATION_S:
        parser.error(f"--duration must be within (0, {MAX_DURATION_S:g}] s")
    if args.concurrency < 1 or args.workers < 1:
        parser.error("--concurrency and --workers must be at least 1")
    try:
        result = run(args.duration, args.concurrency, args.workers, args.server)
    except KeyboardInterrupt:
        print("interrupted; every started process was stopped", file=sys.stderr)
        return 130
    print(render(result))
    return 1 if result.errors else 0


if __name__ == "__main__":
    sys.exit(main())
