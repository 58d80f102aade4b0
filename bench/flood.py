"""`python -m bench.flood [--streams N] [--server granian|uvicorn]`: a flood of streams that
wait for their first token, against ONE gateway worker (docs/performance.md, "Streams
waiting for a first token").

1. A throw-away database and key (bench/stack.py), a fake upstream whose first token
   comes after ten minutes, and one gateway worker whose first-token and total timeouts
   are an hour, so nothing ends a stream during the run but its client.
2. Warm-up: a few plain calls and a small flood that is opened and hung up, so one-time
   allocations (imports, pools, the stream path) are not counted per stream. Then the
   worker's idle RSS.
3. The flood: N streaming chat requests on raw non-blocking sockets, opened in batches,
   until the fake reports `in_flight == N` (every stream is waiting upstream), or the
   count stops rising for STALL_S, or PHASE_TIMEOUT_S passes. The worker's RSS there,
   minus the idle RSS, over the streams held, is the memory of one waiting stream.
4. The hang-up: every client socket is closed at once; the time until the fake's
   `in_flight` is 0 (each upstream connection closed, `cancelled` counts them), and what
   was still open after RELEASE_BAR_S.
5. After: the worker's RSS, `/healthz` and one plain call.

A measurement, not a test: it prints a table and exits non-zero only when something
crashed (the gateway died, or the benchmark itself failed). Every phase is bounded, and
all traffic goes to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType

import httpx

from bench.flood_clients import Clients, pump_for, stream_request
from bench.flood_report import PHASE_TIMEOUT_S, FloodOptions, FloodResult, render, seconds_text
from bench.procs import (
    ProcessTree,
    cpu_seconds,
    established_connections,
    gateway_tree,
    kill_all_leftovers,
    machine_busy_s,
    machine_facts,
    progress,
    rss_mb,
    tail_text,
    wait_for_idle_workers,
    wait_for_quiet_machine,
)
from bench.stack import GATEWAY_MODEL, bench_env, prepare_database
from fakeupstream.process import FakeUpstreamProcess, running_fake_upstream
from gateway.processes import DEFAULT_SERVER, ROOT, SERVERS, GatewayProcess, running_gateway

DEFAULT_STREAMS = 5000
MAX_STREAMS = 20_000
# The fake's first token comes long after any phase of the run has ended.
TTFT_MS = 10 * 60 * 1000
# The gateway must not end a waiting stream itself: first token, idle and total deadlines.
GATEWAY_TIMEOUT_S = "3600"
# Connections opened per batch; a batch gets up to BATCH_WAIT_S for its connects before
# the next one starts (a connect that is still pending stays watched).
BATCH = 250
BATCH_WAIT_S = 1.0
# The flood has stalled when the fake's in-flight count has not risen for this long.
STALL_S = 10.0
# After the plateau is reached, allocations still in progress get this long to finish.
SETTLE_S = 1.0
# The target: every upstream connection is released this soon after the clients left.
RELEASE_BAR_S = 1.0
WARMUP_CALLS = 5
WARMUP_STREAMS = 50
POLL_S = 0.01
# Open files the benchmark process needs besides its client sockets.
SPARE_FILES = 256
# Before starting, wait up to QUIET_WAIT_S for other work to drop below QUIET_BUSY_PCT of
# one core: the release is CPU work, and someone else's test run slows it down.
QUIET_BUSY_PCT = 15.0
QUIET_WAIT_S = 30.0
GATEWAY_LOG = ROOT / "var" / "bench-flood-gateway.log"
GATEWAY_LOG_TAIL_LINES = 20
PROMPT = [{"role": "user", "content": "Say hello to the flood."}]


def run_flood(options: FloodOptions) -> FloodResult:
    result = FloodResult(options, machine_facts())
    result.facts["started at"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    result.facts["open-file limit"] = str(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    busy_pct = wait_for_quiet_machine(QUIET_BUSY_PCT, QUIET_WAIT_S)
    result.facts["machine busy before start"] = f"{busy_pct:.0f} % of a core"
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sy-flood-")))
        fake = stack.enter_context(running_fake_upstream("fast", ttft_ms=TTFT_MS))
        env = bench_env(workdir / "bench.sqlite3", "aiohttp")
        env.update(
            SWITCHYARD_TTFB_TIMEOUT_S=GATEWAY_TIMEOUT_S,
            SWITCHYARD_IDLE_TIMEOUT_S=GATEWAY_TIMEOUT_S,
            SWITCHYARD_TOTAL_TIMEOUT_S=GATEWAY_TIMEOUT_S,
        )
        if options.pool_size is not None:
            env["SWITCHYARD_UPSTREAM_POOL_SIZE"] = str(options.pool_size)
        api_key = prepare_database(env, fake.base_url, workdir).plain
        gateway, worker = _start_gateway(stack, env, options.server)
        progress(f"gateway ({options.server}, 1 worker, pid {worker}) on {gateway.base_url}")
        request = stream_request(
            gateway.port, api_key, {"model": GATEWAY_MODEL, "messages": PROMPT, "stream": True}
        )
        try:
            _warm_up(gateway, fake, api_key, request)
            result.rss_idle_mb = rss_mb(worker)
            _flood(result, gateway, fake, worker, request)
            result.rss_after_mb = rss_mb(worker)
            result.health_after, result.call_after = _check(gateway, api_key)
        except (httpx.HTTPError, OSError, RuntimeError) as exc:
            result.crashed = f"{type(exc).__name__}: {exc}"
        if gateway.process.poll() is not None:
            result.crashed = result.crashed or f"gateway exited with {gateway.process.returncode}"
    if result.crashed or result.stalled or result.answered:
        result.log_tail = tail_text(GATEWAY_LOG, GATEWAY_LOG_TAIL_LINES)
    return result


def _start_gateway(
    stack: ExitStack, env: dict[str, str], server: str
) -> tuple[GatewayProcess, int]:
    """One worker; returns the pid that serves requests (uvicorn's single worker is the
    server process itself; granian's is its child)."""
    GATEWAY_LOG.parent.mkdir(exist_ok=True)
    GATEWAY_LOG.write_bytes(b"")
    trees: list[ProcessTree] = []
    stack.callback(kill_all_leftovers, trees)  # registered first, so it runs after the stop
    gateway = stack.enter_context(
        running_gateway(env, workers=1, server=server, log_path=GATEWAY_LOG)
    )
    master = gateway.process.pid
    tree = wait_for_idle_workers(master, 1) if server == "granian" else gateway_tree(master)
    trees.append(tree)
    return gateway, (tree.workers[0] if tree.workers else master)


def _warm_up(
    gateway: GatewayProcess, fake: FakeUpstreamProcess, api_key: str, request: bytes
) -> None:
    """Plain calls, then WARMUP_STREAMS streams opened, held upstream and hung up."""
    headers = {"Authorization": f"Bearer {api_key}"}
    body = {"model": GATEWAY_MODEL, "messages": PROMPT}
    for _ in range(WARMUP_CALLS):
        answer = httpx.post(f"{gateway.base_url}/chat/completions", json=body, headers=headers)
        if answer.status_code != 200:
            raise RuntimeError(f"warm-up call answered {answer.status_code}: {answer.text[:300]}")
    clients = Clients(gateway.port, request)
    clients.open(WARMUP_STREAMS)
    deadline = time.monotonic() + PHASE_TIMEOUT_S
    while fake.stats()["in_flight"] < WARMUP_STREAMS:
        if time.monotonic() > deadline:
            raise RuntimeError("warm-up streams did not all reach the fake")
        clients.pump(0.05)
    clients.close_all()
    while fake.stats()["in_flight"]:
        if time.monotonic() > deadline:
            raise RuntimeError("warm-up streams were not released")
        time.sleep(0.05)
    time.sleep(SETTLE_S)


def _flood(
    result: FloodResult,
    gateway: GatewayProcess,
    fake: FakeUpstreamProcess,
    worker: int,
    request: bytes,
) -> None:
    n = result.options.streams
    before = fake.stats()
    clients = Clients(gateway.port, request)
    started, cpu_before = time.monotonic(), cpu_seconds(worker)
    try:
        progress(f"opening {n} streams in batches of {BATCH}")
        for opened in range(0, n, BATCH):
            clients.open(min(BATCH, n - opened))
            batch_deadline = time.monotonic() + BATCH_WAIT_S
            while clients.pending and time.monotonic() < batch_deadline:
                clients.pump(0.05)
        result.held, result.stalled = _wait_for_plateau(clients, fake, n, started)
        result.plateau_s = time.monotonic() - started
        result.ramp_cpu_s = cpu_seconds(worker) - cpu_before
        pump_for(clients, SETTLE_S)
        result.rss_plateau_mb = rss_mb(worker)
        result.connected, result.connect_pending = clients.connected, clients.pending
        result.connect_failed, result.answered = clients.failed, clients.answered
        result.worker_clients, result.worker_upstreams = _connections(gateway, fake, worker)
        progress(
            f"  {result.held} streams waiting upstream after {result.plateau_s:.1f} s"
            f" ({result.stalled or 'all of them'}); worker RSS {result.rss_idle_mb:.1f}"
            f" -> {result.rss_plateau_mb:.1f} MB"
        )
    finally:
        hung_up, cpu_before, busy_before = time.monotonic(), cpu_seconds(worker), machine_busy_s()
        clients.close_all()
    _measure_release(result, fake, hung_up)
    result.release_cpu_s = cpu_seconds(worker) - cpu_before
    result.release_busy_pct = (machine_busy_s() - busy_before) / (time.monotonic() - hung_up) * 100
    result.clients_after, result.upstreams_after = _connections(gateway, fake, worker)
    after = fake.stats()
    result.cancelled = after["cancelled"] - before["cancelled"]
    result.upstream_calls = after["requests"] - before["requests"]


def _wait_for_plateau(
    clients: Clients, fake: FakeUpstreamProcess, n: int, started: float
) -> tuple[int, str]:
    """The fake's in_flight once it is n, or once it stopped rising; and why it stopped."""
    best, rose_at = 0, time.monotonic()
    while True:
        clients.pump(0.1)
        in_flight = fake.stats()["in_flight"]
        now = time.monotonic()
        if in_flight >= n:
            return in_flight, ""
        if in_flight > best:
            best, rose_at = in_flight, now
        if now - rose_at > STALL_S:
            return in_flight, f"stalled: no new stream upstream for {STALL_S:g} s"
        if now - started > PHASE_TIMEOUT_S:
            return in_flight, f"stopped after {PHASE_TIMEOUT_S:g} s"


def _measure_release(result: FloodResult, fake: FakeUpstreamProcess, hung_up: float) -> None:
    """Poll the fake until no handler runs, noting how many still ran at RELEASE_BAR_S (a
    handler runs while its upstream connection is open). Only the fake is asked meanwhile:
    reading the worker's sockets from /proc would cost this process CPU that the worker
    misses on a two-core machine; they are counted once the release is over."""
    at_bar = False
    while True:
        in_flight = fake.stats()["in_flight"]
        elapsed = time.monotonic() - hung_up
        if not at_bar and (elapsed >= RELEASE_BAR_S or in_flight == 0):
            at_bar, result.in_flight_after_bar = True, in_flight
        if in_flight == 0:
            result.release_s = elapsed
            break
        if elapsed > PHASE_TIMEOUT_S:
            break
        time.sleep(POLL_S)
    progress(
        f"  hung up: in_flight 0 after {seconds_text(result.release_s)};"
        f" at {RELEASE_BAR_S:g} s {result.in_flight_after_bar} streams still upstream"
    )


def _connections(
    gateway: GatewayProcess, fake: FakeUpstreamProcess, worker: int
) -> tuple[int, int]:
    """(client connections, upstream connections) the worker holds now."""
    clients = established_connections(gateway.port, (worker,))[0]
    return clients, _connections_to(fake.port, worker)


def _connections_to(port: int, pid: int) -> int:
    """Established TCP connections from `pid` to local `port` (IPv4), by remote port;
    bench.procs.established_connections counts the server side, by local port."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "01" and int(fields[2].rsplit(":", 1)[1], 16) == port:
            inodes.add(f"socket:[{fields[9]}]")
    held = 0
    with contextlib.suppress(FileNotFoundError, ProcessLookupError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                held += os.readlink(fd) in inodes
    return held


def _check(gateway: GatewayProcess, api_key: str) -> tuple[str, str]:
    """`/healthz` and one plain call, after the flood (status codes, or the error)."""
    time.sleep(SETTLE_S)
    answers = []
    for method, path, body in (
        ("GET", "/healthz", None),
        ("POST", "/v1/chat/completions", {"model": GATEWAY_MODEL, "messages": PROMPT}),
    ):
        try:
            answer = httpx.request(
                method,
                f"{gateway.url}{path}",
                json=body,
                timeout=10.0,
                headers={"Authorization": f"Bearer {api_key}"},
            )
            answers.append(str(answer.status_code))
        except httpx.HTTPError as exc:
            answers.append(type(exc).__name__)
    return answers[0], answers[1]


def _raise_open_file_limit(streams: int) -> None:
    """The gateway inherits this process's limit and needs two files per stream (client
    and upstream socket): raise the soft limit to the hard one when that is short."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = 2 * streams + SPARE_FILES
    if soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(needed, soft)), hard))


def parse_options(argv: Sequence[str] | None = None) -> FloodOptions:
    parser = argparse.ArgumentParser(
        prog="python -m bench.flood",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--streams", type=int, default=DEFAULT_STREAMS, help="streams (5000)")
    parser.add_argument("--server", choices=SERVERS, default=DEFAULT_SERVER)
    parser.add_argument("--pool-size", type=int, help="SWITCHYARD_UPSTREAM_POOL_SIZE")
    parser.add_argument(
        "--worker-concurrency", type=int, help="SWITCHYARD_WORKER_CONCURRENCY (granian)"
    )
    args = parser.parse_args(argv)
    if not 1 <= args.streams <= MAX_STREAMS:
        parser.error(f"--streams must be within [1, {MAX_STREAMS}]")
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and 2 * args.streams + SPARE_FILES > hard:
        parser.error(f"the open-file limit ({hard}) is too low for {args.streams} streams")
    return FloodOptions(args.streams, args.server, args.pool_size, args.worker_concurrency)


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # SIGTERM unwinds like Ctrl-C, so every child is stopped


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_options(argv)
    signal.signal(signal.SIGTERM, _terminate)
    _raise_open_file_limit(options.streams)
    if options.worker_concurrency is not None:
        # gateway_command reads it from this process's environment.
        os.environ["SWITCHYARD_WORKER_CONCURRENCY"] = str(options.worker_concurrency)
    try:
        result = run_flood(options)
    except KeyboardInterrupt:
        print("interrupted; every started process was stopped", file=sys.stderr)
        return 130
    print(render(result))
    return 1 if result.crashed else 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
