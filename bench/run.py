"""One benchmark run from start to finish: the fake upstream alone, then the gateway in
front of it, every scenario direct and through the gateway, and the gateway's memory.

Every process started here is stopped on the way out, on error and on Ctrl-C too:
the fake and the gateway by their context managers, and any gateway worker that
outlived its master by pid.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from bench.lean import lean_p50s
from bench.load import REPLY_TOKENS, Load, Target, run_load
from bench.probe import Probe
from bench.procs import (
    ProcessTree,
    kill_all_leftovers,
    machine_facts,
    progress,
    rss_mb,
    source_digest,
    tail_text,
    wait_for_idle_workers,
    wait_for_quiet_machine,
)
from bench.results import Measurement, Pair, RssSample, Verdict, judge_bars
from bench.stack import (
    GATEWAY_MODEL,
    NATIVE_MODEL,
    ROUTED_MODEL,
    UPSTREAM_MODEL,
    GatewayOptions,
    bench_env,
    forget_redis_keys,
    postgres_database,
    prepare_database,
)
from fakeupstream.process import FakeUpstreamProcess, running_fake_upstream
from gateway.processes import ROOT, GatewayProcess, running_gateway

GATEWAY_LOG = ROOT / "var" / "bench-gateway.log"
DEFAULT_POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/postgres"  # BENCH_POSTGRES_URL
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"  # BENCH_REDIS_URL
GATEWAY_LOG_TAIL_LINES = 20
# Before starting, wait up to QUIET_WAIT_S for other work to drop below QUIET_BUSY_PCT
# of one core; the per-scenario "others %" column shows what happened during the run.
QUIET_BUSY_PCT = 15.0
QUIET_WAIT_S = 60.0
# The code under test, digested into the report (the working tree has no commit to name).
LEAN_APIS = ("chat", "routed", "governed")  # the chat-shaped paths bench/lean.py can send
SOURCE_PACKAGES = ("gateway", "routing", "workspaces", "presets", "audit")


@dataclass(frozen=True, slots=True)
class BenchOptions:
    duration_s: float
    warmup_s: float
    concurrencies: tuple[int, ...]
    gateway: GatewayOptions
    messages: bool = True  # also the Anthropic Messages path, against the same direct runs
    routes: bool = True  # also chat from a key with a three-node route (bench/stack.py)
    governed: bool = True  # also chat from a key with a budget and rate limits
    store: str = "sqlite"  # sqlite | postgres-redis: where the gateway's state lives
    # Each scenario's gateway targets measured this many times, interleaved, the order
    # reversed every other round, so that a machine drifting slower favours no path.
    rounds: int = 1
    # Non-stream chat requests a chat path a round from a lean client (bench/lean.py): the
    # added latency at c1 that the load generator's own cost hides. 0: not measured.
    lean_requests: int = 0


@dataclass
class BenchReport:
    options: BenchOptions
    facts: dict[str, str]
    fake_alone: list[Measurement] = field(default_factory=list)
    pairs: list[Pair] = field(default_factory=list)
    rss: list[RssSample] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    # Per round, each chat path's (chat, routed, governed) lean added p50 at c1, in ms.
    lean: list[dict[str, float]] = field(default_factory=list)
    gateway_log_tail: str = ""


def run_bench(options: BenchOptions) -> BenchReport:
    """Run every scenario once; progress goes to stderr, the results into the report."""
    report = BenchReport(options, machine_facts())
    report.facts["started at"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    report.facts["source digest"] = source_digest(ROOT, SOURCE_PACKAGES)
    cpus = int(report.facts["CPUs (nproc)"])
    busy_pct = wait_for_quiet_machine(QUIET_BUSY_PCT, QUIET_WAIT_S)
    if busy_pct >= QUIET_BUSY_PCT:
        progress(f"the machine is still busy ({busy_pct:.0f} % of a core); running anyway")
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sy-bench-")))
        fake = stack.enter_context(running_fake_upstream("fast", reply_tokens=REPLY_TOKENS))
        direct = Target("direct", f"{fake.base_url}/chat/completions", UPSTREAM_MODEL, "bench")
        progress(f"fake upstream alone on {fake.base_url}")
        alone, probe = replace(direct, name="fake alone"), Probe(fake.process.pid, cpus)
        for stream in (False, True):
            load = Load(stream, max(options.concurrencies), options.warmup_s, options.duration_s)
            report.fake_alone.append(_measure(fake, alone, load, probe))

        env = _environment(stack, workdir, options)
        report.facts["store"] = options.store
        keys = prepare_database(env, fake.base_url, workdir)
        gateway, tree = _start_gateway(stack, env, options.gateway)
        via = Target("gateway", f"{gateway.base_url}/chat/completions", GATEWAY_MODEL, keys.plain)
        probe = Probe(fake.process.pid, cpus, tree, gateway.port, options.store != "sqlite")
        report.rss.append(_rss("idle, before load", tree))
        messages = replace(via, url=f"{gateway.base_url}/messages", api="messages")
        native = replace(messages, model=NATIVE_MODEL, api="native")
        routed = replace(via, model=ROUTED_MODEL, api_key=keys.routed, api="routed")
        governed = replace(via, api_key=keys.governed, api="governed")
        targets = [
            via,
            *([messages, native] if options.messages else []),
            *([routed] if options.routes else []),
            *([governed] if options.governed else []),
        ]
        for stream in (False, True):
            for concurrency in options.concurrencies:
                load = Load(stream, concurrency, options.warmup_s, options.duration_s)
                straight = _measure(fake, direct, load, probe)
                for round_ in range(options.rounds):
                    # the same direct run is the baseline of every path and round
                    for target in targets if round_ % 2 == 0 else targets[::-1]:
                        measured = _measure(fake, target, load, probe)
                        report.pairs.append(Pair(straight, measured, round_))
                # After every scenario, so that growth can be told from a plateau.
                report.rss.append(_rss(f"after {load_name(stream)} c{concurrency}", tree))
        chat_paths = [t for t in targets if t.api in LEAN_APIS]
        for round_ in range(options.rounds if options.lean_requests else 0):
            progress(f"lean c1, round {round_ + 1}: {', '.join(t.api for t in chat_paths)}")
            direct_p50, *p50s = lean_p50s([direct, *chat_paths], options.lean_requests)
            paths = zip(chat_paths, p50s, strict=True)
            report.lean.append({t.api: p50 - direct_p50 for t, p50 in paths})
    report.verdicts = judge_bars(report.pairs, report.rss[0] if report.rss else None)
    if any(pair.gateway.error_count for pair in report.pairs):
        report.gateway_log_tail = tail_text(GATEWAY_LOG, GATEWAY_LOG_TAIL_LINES)
    return report


def _environment(stack: ExitStack, workdir: Path, options: BenchOptions) -> dict[str, str]:
    """The gateway's environment: SQLite in `workdir`, or a PostgreSQL database made for
    this run and Redis under a prefix of its own (both removed afterwards)."""
    sqlite = workdir / "bench.sqlite3"
    if options.store == "sqlite":
        return bench_env(sqlite, options.gateway.transport)
    admin = os.environ.get("BENCH_POSTGRES_URL", DEFAULT_POSTGRES_URL)
    redis_url = os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS_URL)
    database = stack.enter_context(postgres_database(admin))
    env = bench_env(sqlite, options.gateway.transport, database_url=database, redis_url=redis_url)
    stack.callback(forget_redis_keys, redis_url, env["SWITCHYARD_SHARED_STATE_PREFIX"])
    return env


def load_name(stream: bool) -> str:
    return "stream" if stream else "non-stream"


def _start_gateway(
    stack: ExitStack, env: dict[str, str], options: GatewayOptions
) -> tuple[GatewayProcess, ProcessTree]:
    """Start the gateway inside `stack`; return it once all its workers are idle."""
    GATEWAY_LOG.parent.mkdir(exist_ok=True)
    GATEWAY_LOG.write_bytes(b"")
    trees: list[ProcessTree] = []
    stack.callback(kill_all_leftovers, trees)  # registered first, so it runs after the stop
    gateway = stack.enter_context(
        running_gateway(env, workers=options.workers, server=options.server, log_path=GATEWAY_LOG)
    )
    tree = wait_for_idle_workers(gateway.process.pid, options.workers)
    trees.append(tree)
    progress(f"gateway ({options.server}, {len(tree.workers)} workers) on {gateway.base_url}")
    return gateway, tree


def _measure(fake: FakeUpstreamProcess, target: Target, load: Load, probe: Probe) -> Measurement:
    calls_before = fake.stats()["requests"]
    measured = run_load(target, load, probe)
    measured = replace(measured, upstream_calls=fake.stats()["requests"] - calls_before)
    progress(
        f"  {measured.mode:>10} c{load.concurrency:<3} {target.name:<10}"
        f" {measured.rate_per_s:8.1f}/s  p50 {measured.p50_ms:7.2f} ms"
        f"  p99 {measured.p99_ms:7.2f} ms  ttfb {measured.ttfb_p50_ms:7.2f} ms"
        f"  errors {measured.error_count}"
    )
    return measured


def _rss(label: str, tree: ProcessTree) -> RssSample:
    return RssSample(label, rss_mb(tree.master), tuple(rss_mb(pid) for pid in tree.workers))
