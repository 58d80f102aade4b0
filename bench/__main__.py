"""`python -m bench [--quick] [--duration S] [--workers N] [--server ...] [--transport ...]
[--no-messages] [--no-routes] [--no-governed] [--rounds N] [--lean N]
[--store sqlite|postgres-redis]`:
run the benchmark, print the Markdown report and write it to var/bench-latest.md."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from types import FrameType

from bench.report import render
from bench.run import BenchOptions, run_bench
from bench.stack import GatewayOptions
from gateway.processes import DEFAULT_SERVER, ROOT, SERVERS

LATEST_REPORT = ROOT / "var" / "bench-latest.md"
FULL_CONCURRENCIES = (1, 16, 64)
QUICK_CONCURRENCIES = (1, 16)
FULL_DURATION_S = 5.0
QUICK_DURATION_S = 2.0
# Durations are bounded so that a typo cannot keep two cores busy for an hour.
MAX_DURATION_S = 120.0
MAX_ROUNDS = 20
LEAN_REQUESTS = 500
MAX_LEAN_REQUESTS = 20_000


def parse_options(argv: Sequence[str] | None = None) -> BenchOptions:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="2 s per scenario, c1 and c16")
    parser.add_argument("--duration", type=float, help="measured seconds per scenario (5)")
    parser.add_argument("--warmup", type=float, default=1.0, help="warm-up seconds (1)")
    parser.add_argument("--workers", type=int, default=2, help="gateway workers (2)")
    parser.add_argument("--server", choices=SERVERS, default=DEFAULT_SERVER)
    parser.add_argument("--transport", choices=("aiohttp", "httpx"), default="aiohttp")
    parser.add_argument(
        "--no-messages", action="store_true", help="skip the Anthropic Messages path (/v1/messages)"
    )
    parser.add_argument(
        "--no-routes", action="store_true", help="skip the key with a three-node route"
    )
    parser.add_argument(
        "--no-governed", action="store_true", help="skip the key with a budget and rate limits"
    )
    parser.add_argument(
        "--store",
        choices=("sqlite", "postgres-redis"),
        default="sqlite",
        help="the gateway's database and Redis (BENCH_POSTGRES_URL, BENCH_REDIS_URL)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="each scenario's gateway paths N times, interleaved (1)",
    )
    parser.add_argument(
        "--lean",
        type=int,
        default=LEAN_REQUESTS,
        help="lean c1 requests a chat path a round, in alternating blocks "
        f"(bench/lean.py; {LEAN_REQUESTS}; 0: none)",
    )
    args = parser.parse_args(argv)
    duration_s = args.duration or (QUICK_DURATION_S if args.quick else FULL_DURATION_S)
    if not 0 < duration_s <= MAX_DURATION_S or not 0 <= args.warmup <= MAX_DURATION_S:
        parser.error(f"durations must be within (0, {MAX_DURATION_S:g}] s")
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    if not 1 <= args.rounds <= MAX_ROUNDS:
        parser.error(f"--rounds must be within 1..{MAX_ROUNDS}")
    if not 0 <= args.lean <= MAX_LEAN_REQUESTS:
        parser.error(f"--lean must be within 0..{MAX_LEAN_REQUESTS}")
    return BenchOptions(
        duration_s=duration_s,
        warmup_s=args.warmup,
        concurrencies=QUICK_CONCURRENCIES if args.quick else FULL_CONCURRENCIES,
        gateway=GatewayOptions(args.workers, args.server, args.transport),
        messages=not args.no_messages,
        routes=not args.no_routes,
        governed=not args.no_governed,
        store=args.store,
        rounds=args.rounds,
        lean_requests=args.lean,
    )


def _terminate(signum: int, frame: FrameType | None) -> None:
    # SIGTERM (e.g. from `timeout` or CI) unwinds like Ctrl-C, so every child is stopped.
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_options(argv)
    signal.signal(signal.SIGTERM, _terminate)
    try:
        report = run_bench(options)
    except KeyboardInterrupt:
        print("interrupted; every started process was stopped", file=sys.stderr)
        return 130
    text = render(report)
    print(text)
    LATEST_REPORT.parent.mkdir(exist_ok=True)
    LATEST_REPORT.write_text(text + "\n")
    print(f"(written to {LATEST_REPORT.relative_to(ROOT)})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
