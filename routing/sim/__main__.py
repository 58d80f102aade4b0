"""`python -m routing.sim [--seed N] [--requests N] [--scenario NAME]… [--strategy NAME]…
[--jobs N]`: run every chosen scenario under every chosen strategy and print the comparison
table (`make simulate SIM_ARGS="…"`). Runs are independent, so they spread over `--jobs`
processes; the table does not depend on how many. See docs/simulation.md."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

from routing.sim.engine import RATE_PER_S, SESSION_SHARE, run
from routing.sim.report import Summary, render, summarise
from routing.sim.scenarios import SCENARIOS
from routing.sim.strategies import STRATEGIES

DEFAULT_SEED = 7
DEFAULT_REQUESTS = 3000  # 300 simulated seconds per run at RATE_PER_S
# About 15 s per run, a few minutes for every run on 2 cores: a typo does not take an hour.
MAX_REQUESTS = 100_000


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m routing.sim", description=__doc__)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="random seed (7)")
    parser.add_argument(
        "--requests", type=int, default=DEFAULT_REQUESTS, help="requests per run (3000)"
    )
    parser.add_argument(
        "--scenario", action="append", choices=sorted(SCENARIOS), help="repeatable; all"
    )
    parser.add_argument("--strategy", action="append", choices=STRATEGIES, help="repeatable; all")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes (cores)")
    args = parser.parse_args(argv)
    if not 1 <= args.requests <= MAX_REQUESTS:
        parser.error(f"--requests must be within 1..{MAX_REQUESTS}")
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    return args


def _summary(job: tuple[str, str, int, int]) -> Summary:
    scenario, strategy, requests, seed = job
    return summarise(run(scenario, strategy, requests=requests, seed=seed))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    scenarios = args.scenario or list(SCENARIOS)
    strategies = args.strategy or list(STRATEGIES)
    jobs = [(sc, st, args.requests, args.seed) for sc in scenarios for st in strategies]
    if args.jobs == 1 or len(jobs) == 1:
        summaries = [_summary(job) for job in jobs]
    else:
        with ProcessPoolExecutor(max_workers=min(args.jobs, len(jobs))) as pool:
            summaries = list(pool.map(_summary, jobs))
    simulated_s = args.requests / RATE_PER_S
    sys.stdout.write(
        f"Routing simulation: seed {args.seed}, {args.requests} requests per run at "
        f"{RATE_PER_S:g}/s ({simulated_s:g} simulated s), {SESSION_SHARE:.0%} in sessions.\n\n"
    )
    sys.stdout.write(render(summaries))
    sys.stdout.write("\nScenarios:\n")
    for name in scenarios:
        sys.stdout.write(f"  {name:<16}  {SCENARIOS[name].summary}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
