"""The whole gateway of two checkouts side by side, in one A/B run: the starting commit of a
change against the working tree (`python -m bench.trees --base DIR`; docs/performance.md).

Both gateways (granian, two workers, SQLite — or with `--store postgres-redis` a
PostgreSQL database each and one Redis —, each tree's own `.venv` and its own
`bench/stack.py` catalog) answer one fake upstream, each with its bench key (`--key
governed`: the key with a budget and a rate limit); the scenarios alternate between them in
ABBA order, so a machine that drifts slower over the run favours neither. Two instruments:

- added latency at c1 from a lean client (bench/lean.py): the two gateways and the fake
  upstream alternating in blocks of 50 requests, the fake's own p50 subtracted;
- throughput at c16 from `make bench`'s load generator, with the gateway's CPU a request.

The base tree needs `make install` once (its own virtualenv).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from bench.lean import lean_p50s
from bench.load import REPLY_TOKENS, Load, Target, run_load
from bench.probe import Probe
from bench.procs import ProcessTree, kill_all_leftovers, wait_for_idle_workers
from bench.run import DEFAULT_POSTGRES_URL, DEFAULT_REDIS_URL
from bench.stack import GATEWAY_MODEL, UPSTREAM_MODEL, forget_redis_keys, postgres_database
from fakeupstream.process import running_fake_upstream
from gateway.processes import ROOT, running_gateway

# Run in each tree by its own interpreter: that tree's environment, database and key.
PREPARE = """
import json, sys
from pathlib import Path
from bench import stack
db, upstream, workdir, database_url, redis_url, key = sys.argv[1:7]
if database_url:
    env = stack.bench_env(Path(db), "aiohttp", database_url=database_url, redis_url=redis_url)
else:
    env = stack.bench_env(Path(db), "aiohttp")
keys = stack.prepare_database(env, upstream, Path(workdir))
print(json.dumps({"env": env, "key": keys if isinstance(keys, str) else getattr(keys, key)}))
"""


@dataclass(frozen=True, slots=True)
class Tree:
    name: str  # base | head
    path: Path
    url: str = ""
    key: str = ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="the other checkout")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--requests", type=int, default=1000, help="lean c1 requests a round")
    parser.add_argument("--duration", type=float, default=4.0, help="c16 seconds a round")
    parser.add_argument(
        "--store",
        choices=("sqlite", "postgres-redis"),
        default="sqlite",
        help="postgres-redis: BENCH_POSTGRES_URL, BENCH_REDIS_URL",
    )
    parser.add_argument(
        "--key",
        choices=("plain", "governed"),
        default="plain",
        help="governed: the bench key with a budget and a rate limit",
    )
    args = parser.parse_args()
    if args.key == "governed" and args.store == "sqlite":
        parser.error("--key governed needs --store postgres-redis (what issue 13 measures)")
    trees = [Tree("base", args.base.resolve()), Tree("head", ROOT)]
    with ExitStack() as stack:
        fake = stack.enter_context(running_fake_upstream("fast", reply_tokens=REPLY_TOKENS))
        direct = f"{fake.base_url}/chat/completions"
        trees = [stack.enter_context(_serving(t, fake.base_url, stack, args)) for t in trees]
        probe = Probe(fake.process.pid, os.cpu_count() or 1)
        rows: list[dict[str, float]] = []
        for round_ in range(args.rounds):
            row = _lean_added(trees, direct, args.requests)
            for tree in trees if round_ % 2 == 0 else trees[::-1]:
                for stream in (False, True):
                    target = Target(
                        tree.name, f"{tree.url}/chat/completions", GATEWAY_MODEL, tree.key
                    )
                    measured = run_load(target, Load(stream, 16, 1.0, args.duration), probe)
                    kind = "stream" if stream else "non-stream"
                    row[f"{tree.name} {kind} c16 /s"] = measured.rate_per_s
            rows.append(row)
            print(json.dumps({k: round(v, 3) for k, v in row.items()}), flush=True)
        print(_report(rows, args))


@contextmanager
def _serving(
    tree: Tree, upstream: str, stack: ExitStack, args: argparse.Namespace
) -> Iterator[Tree]:
    """`tree`'s gateway on a database of its own; stopped on exit."""
    workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sy-trees-")))
    database_url = redis_url = ""
    if args.store == "postgres-redis":
        admin = os.environ.get("BENCH_POSTGRES_URL", DEFAULT_POSTGRES_URL)
        database_url = stack.enter_context(postgres_database(admin, f"_{tree.name}"))
        redis_url = os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS_URL)
    python = str(tree.path / ".venv" / "bin" / "python")
    made = subprocess.run(
        [
            python,
            "-c",
            PREPARE,
            str(workdir / "db.sqlite3"),
            upstream,
            str(workdir),
            database_url,
            redis_url,
            args.key,
        ],
        cwd=tree.path,
        capture_output=True,
        text=True,
        check=True,
    )
    prepared = json.loads(made.stdout.strip().splitlines()[-1])
    if redis_url:  # the run's counters, reservations and done markers
        prefix = prepared["env"]["SWITCHYARD_SHARED_STATE_PREFIX"]
        stack.callback(forget_redis_keys, redis_url, prefix)
    log_path = workdir / "gateway.log"
    started: list[ProcessTree] = []
    try:
        with running_gateway(
            prepared["env"], workers=2, server="granian", log_path=log_path, tree=tree.path
        ) as gateway:
            started.append(wait_for_idle_workers(gateway.process.pid, 2))
            yield replace(tree, url=gateway.base_url, key=prepared["key"])
    finally:
        kill_all_leftovers(started)  # workers that outlived their master


def _lean_added(trees: list[Tree], direct: str, requests: int) -> dict[str, float]:
    """Each tree's added latency at c1 in ms: its lean p50 less the fake upstream's own,
    the three measured in alternating blocks (bench/lean.py)."""
    targets = [Target("fake", direct, UPSTREAM_MODEL, "bench")] + [
        Target(t.name, f"{t.url}/chat/completions", GATEWAY_MODEL, t.key) for t in trees
    ]
    fake_p50, *p50s = lean_p50s(targets, requests)
    return {f"{t.name} c1 added ms": p50 - fake_p50 for t, p50 in zip(trees, p50s, strict=True)}


def _report(rows: list[dict[str, float]], args: argparse.Namespace) -> str:
    lines = [
        f"\n{args.rounds} ABBA rounds, base {args.base} vs head {ROOT} (medians of the rounds)",
        "| measure | base | head | head/base |",
        "|---|--:|--:|--:|",
    ]
    for measure in ("c1 added ms", "non-stream c16 /s", "stream c16 /s"):
        base = statistics.median(r[f"base {measure}"] for r in rows)
        head = statistics.median(r[f"head {measure}"] for r in rows)
        pairs = statistics.median(r[f"head {measure}"] / r[f"base {measure}"] for r in rows)
        lines.append(
            f"| {measure} | {base:.3f} | {head:.3f} | {head / base:.3f} (pairs {pairs:.3f}) |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
