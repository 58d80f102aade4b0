"""`make rollout-test`: a rolling restart under load, measured (SPEC R-OPS-4).

Three replicas of `switchyard serve` on PostgreSQL and Redis behind HAProxy on 127.0.0.1
(health checks on /readyz), the Celery worker and beat running, and a steady load
(deploy/rollout_load.py) from three keys with budgets, each in a workspace of its own (one
with rate limits, one routed).
Meanwhile each replica in turn gets SIGTERM, drains, and starts again with a changed
setting, and a new route version is deployed half way. Then it checks, and exits 1 when
one fails: no client error, no stream cut short, exactly one trace per request, each key's
budget ledger equal to the usage the fake upstream reported for it, and every request sent
later than ROUTE_BOUND_S after the deploy served by the new version.

With `--pgbouncer` the replicas, the Celery worker and beat, the route's deploy and a
`route replay` reach PostgreSQL through PgBouncer in transaction pooling mode
(deploy/pooler.py), with SWITCHYARD_DB_TRANSACTION_POOLING set; migrations and the checks
connect straight.

With `--redis-cluster` the fleet's Redis is a Redis Cluster of three masters on
127.0.0.1 (deploy/redis_cluster.py) with SWITCHYARD_REDIS_CLUSTER set; Celery's broker
stays on the plain Redis (`--broker`).

With `--outage redis|postgres` the same fleet and load (plus a key with no budget or
limit) see that dependency taken away instead of the restarts (deploy/outages.py; SPEC
R-OPS-4's second half): only budgeted requests may fail, and only with 503
budget_store_unavailable; the traces and ledgers must add up once it is back.

This module holds the command line and the run's schedule; the catalog and keys it serves
are in deploy/rollout_catalog.py, its processes in deploy/rollout_fleet.py, the stores'
counters in deploy/rollout_footprint.py, the checks and the printed report in
deploy/rollout_report.py.

    python -m deploy.rollout [--seconds 60] [--rate 20] [--outage redis|postgres] [--pgbouncer]
        [--redis-cluster]
        [--postgres postgres://postgres@127.0.0.1:5432/postgres] [--redis redis://127.0.0.1:6379/0]
        [--broker redis://127.0.0.1:6379/1]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import tempfile
import time
import uuid
from pathlib import Path

from bench.stack import forget_redis_keys, postgres_database
from deploy.outages import DOWN_S, Outage, take_down
from deploy.pooler import pgbouncer
from deploy.redis_cluster import redis_cluster
from deploy.rollout_catalog import ROUTE, UPSTREAM_KEY_ENV, WORKSPACE, prepare
from deploy.rollout_fleet import (
    DRAIN_S,
    GRACE_S,
    Replica,
    background,
    balancer,
    restart,
    start,
    stop,
)
from deploy.rollout_footprint import Footprint, through_pgbouncer
from deploy.rollout_load import Caller, Outcome, run_load
from deploy.rollout_report import ROUTE_BOUND_S, report, report_outage
from fakeupstream.process import free_port, running_fake_upstream
from gateway.processes import base_env, manage

AFTER_DEPLOY_S = 5.0  # the load's least time past the deploy's bound
AFTER_OUTAGE_S = 15.0  # and past a dependency's return
# When each replica's SIGTERM comes and when the route is deployed, as shares of the run.
RESTARTS_AT, DEPLOY_AT = (0.12, 0.40, 0.68), 0.5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=20.0, help="requests per second")
    parser.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/1", help="Celery's")
    parser.add_argument(
        "--outage",
        choices=sorted(DOWN_S),
        default="",
        help="instead of restarts: take this dependency down (deploy/outages.py)",
    )
    parser.add_argument(
        "--pgbouncer", action="store_true", help="the fleet through PgBouncer, transaction pooling"
    )
    parser.add_argument(
        "--redis-cluster", action="store_true", help="the fleet on a Redis Cluster of three masters"
    )
    args = parser.parse_args()
    if args.pgbouncer and args.outage:
        parser.error("--pgbouncer measures the rolling restart, not an --outage")
    if args.redis_cluster and args.outage:
        parser.error("--redis-cluster measures the rolling restart, not an --outage")
    with tempfile.TemporaryDirectory(prefix="switchyard-rollout-") as folder:
        failures = rollout(Path(folder), args)
    raise SystemExit(1 if failures else 0)


def rollout(folder: Path, args: argparse.Namespace) -> list[str]:
    seconds, rate, outage = args.seconds, args.rate, args.outage
    prefix = f"switchyard-rollout-{uuid.uuid4().hex[:8]}"
    with (
        postgres_database(args.postgres, "_rollout") as database_url,
        (
            pgbouncer(database_url, folder)
            if args.pgbouncer
            else contextlib.nullcontext(database_url)
        ) as fleet_database_url,
        (
            redis_cluster(folder) if args.redis_cluster else contextlib.nullcontext(args.redis)
        ) as redis_url,
        running_fake_upstream("slow", name="rollout") as fake,
    ):
        clustered = {"SWITCHYARD_REDIS_CLUSTER": "1"} if args.redis_cluster else {}
        env = base_env(
            DATABASE_URL=database_url,
            REDIS_URL=redis_url,
            CELERY_BROKER_URL=args.broker,
            **clustered,
            SWITCHYARD_SHARED_STATE_PREFIX=prefix,
            LOG_LEVEL="WARNING",
            SWITCHYARD_DRAIN_GRACE_SECONDS=str(GRACE_S),
            SWITCHYARD_DRAIN_SECONDS=str(DRAIN_S),
            **{UPSTREAM_KEY_ENV: "rollout-upstream-key"},
        )
        # the migrations and the harness's checks (database_url) connect straight, the
        # fleet (with --pgbouncer) through PgBouncer
        pooled = {"SWITCHYARD_DB_TRANSACTION_POOLING": "1"} if args.pgbouncer else {}
        fleet = {**env, "DATABASE_URL": fleet_database_url, **pooled}
        replicas = [Replica(f"r{n}", free_port(), folder / f"r{n}.log") for n in (1, 2, 3)]
        try:
            callers = prepare(env, fake, folder)
            with background(fleet, folder), balancer(replicas, folder) as url:
                for replica in replicas:
                    start(replica, fleet)
                if outage:
                    outcomes, down = asyncio.run(
                        _load_and_take_down(url, callers, rate, seconds, outage, redis_url)
                    )
                    return report_outage(outcomes, down, fake, database_url, rate)
                before = Footprint.now(redis_url, database_url, args.redis_cluster)
                outcomes, deployed_s = asyncio.run(
                    _load_and_roll(url, callers, rate, seconds, replicas, fleet)
                )
                used = Footprint.now(redis_url, database_url, args.redis_cluster) - before
                through = through_pgbouncer(fleet) if args.pgbouncer else ""
            return report(outcomes, deployed_s, replicas, fake, database_url, rate, used, through)
        finally:
            stop(replicas)
            if not args.redis_cluster:  # (a cluster goes with its folder)
                forget_redis_keys(redis_url, prefix)


async def _load_and_roll(
    url: str,
    callers: list[Caller],
    rate: float,
    seconds: float,
    replicas: list[Replica],
    env: dict[str, str],
) -> tuple[list[Outcome], float]:
    stop = asyncio.Event()
    load = asyncio.create_task(run_load(url, callers, rate, stop))
    started = time.monotonic()
    deployed_s = await asyncio.to_thread(roll, replicas, env, seconds, started)
    # the load goes on for the run's length, and past the deploy's bound long enough to see
    # the new version on every replica
    ends_s = max(seconds, deployed_s + ROUTE_BOUND_S + AFTER_DEPLOY_S)
    await asyncio.sleep(max(0.0, started + ends_s - time.monotonic()))
    stop.set()
    return await load, deployed_s


def roll(replicas: list[Replica], env: dict[str, str], seconds: float, start_at: float) -> float:
    """SIGTERM each replica at its time and start it again with LOG_LEVEL changed; deploy
    route version 2 at DEPLOY_AT. Returns when the deploy command returned (seconds after
    the load started)."""
    deployed_s = 0.0
    steps = [*zip(RESTARTS_AT, replicas, strict=True), (DEPLOY_AT, None)]
    for at, replica in sorted(steps, key=lambda step: step[0]):
        time.sleep(max(0.0, start_at + at * seconds - time.monotonic()))
        if replica is None:
            manage("route", "deploy", ROUTE, "--workspace", WORKSPACE, env=env)
            deployed_s = time.monotonic() - start_at
        else:
            restart(replica, {**env, "LOG_LEVEL": "INFO"})
    return deployed_s


async def _load_and_take_down(
    url: str, callers: list[Caller], rate: float, seconds: float, service: str, redis_url: str
) -> tuple[list[Outcome], Outage]:
    """The load, with `service` taken down a quarter of the way in; the load goes on at
    least AFTER_OUTAGE_S after it answers again."""
    stop = asyncio.Event()
    load = asyncio.create_task(run_load(url, callers, rate, stop))
    started = time.monotonic()
    await asyncio.sleep(seconds / 4)
    down = await asyncio.to_thread(take_down, service, redis_url, started)
    ends_s = max(seconds, down.ended_s + AFTER_OUTAGE_S)
    await asyncio.sleep(max(0.0, started + ends_s - time.monotonic()))
    stop.set()
    return await load, down


if __name__ == "__main__":
    main()
