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

    python -m deploy.rollout [--seconds 60] [--rate 20] [--outage redis|postgres] [--pgbouncer]
        [--redis-cluster]
        [--postgres postgres://postgres@127.0.0.1:5432/postgres] [--redis redis://127.0.0.1:6379/0]
        [--broker redis://127.0.0.1:6379/1]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg
import redis

from bench.stack import forget_redis_keys, postgres_database
from deploy.outages import DOWN_S, Outage, take_down
from deploy.pooler import Served, pgbouncer
from deploy.redis_cluster import redis_cluster
from deploy.rollout_load import Caller, Outcome, run_load
from fakeupstream.process import FakeUpstreamProcess, free_port, running_fake_upstream
from gateway.processes import ROOT, base_env, manage

WORKSPACE, ROUTE, ROUTED_MODEL, MODEL = (
    "rollout",
    "rollout-route",
    "rollout-routed",
    "rollout/model",
)
PRICE_IN, PRICE_OUT = 3, 15  # USD per 1M tokens: a token costs 3 or 15 micro-dollars
KEYS = ("budgeted", "limited", "routed")  # each with a budget of its own
OPEN = "open"  # a key with no budget and no limit: it never asks the admission store
# Each budgeted key in a workspace of its own: on a Redis Cluster their keys lie on three
# masters (the workspaces of a fresh database, ids 1 to 3, hash to three slot ranges).
HOMES = {
    "budgeted": f"{WORKSPACE}-budgeted",
    "limited": f"{WORKSPACE}-limited",
    "routed": WORKSPACE,
    OPEN: WORKSPACE,
}
UPSTREAM_KEY_ENV = "ROLLOUT_UPSTREAM_KEY"
GRACE_S, DRAIN_S = 2.0, 20.0  # each replica's SWITCHYARD_DRAIN_GRACE_SECONDS, _DRAIN_SECONDS
# docs/routes.md: every gateway process picks a deploy up within two seconds.
ROUTE_BOUND_S = 2.0
AFTER_DEPLOY_S = 5.0  # the load's least time past the deploy's bound
AFTER_OUTAGE_S = 15.0  # and past a dependency's return
# When each replica's SIGTERM comes and when the route is deployed, as shares of the run.
RESTARTS_AT, DEPLOY_AT = (0.12, 0.40, 0.68), 0.5
SETTLE_TIMEOUT_S = 60.0  # for the traces and the ledger to reach the database after the load


@dataclass
class Replica:
    name: str
    port: int
    log: Path
    process: subprocess.Popen[bytes] | None = None
    events: list[str] = field(default_factory=list)


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
                through = _through_pgbouncer(fleet) if args.pgbouncer else ""
            return report(outcomes, deployed_s, replicas, fake, database_url, rate, used, through)
        finally:
            stop(replicas)
            if not args.redis_cluster:  # (a cluster goes with its folder)
                forget_redis_keys(redis_url, prefix)


@dataclass(frozen=True, slots=True)
class Footprint:
    """What the fleet asked of Redis and PostgreSQL: counters read before and after the
    load (their difference), and the connections open to the run's database at the end."""

    redis_commands: int  # the whole server's (Celery's included), or the cluster's masters'
    transactions: int  # committed in the run's database
    connections: int
    masters: tuple[int, ...] = ()  # on a cluster, each master's share of redis_commands

    @classmethod
    def now(cls, redis_url: str, database_url: str, cluster: bool = False) -> Footprint:
        if cluster:
            nodes = redis.RedisCluster.from_url(redis_url)
            stats = nodes.info("stats", target_nodes=redis.RedisCluster.PRIMARIES)
            masters = tuple(int(stats[n]["total_commands_processed"]) for n in sorted(stats))
            commands = sum(masters)
            nodes.close()
        else:
            client = redis.Redis.from_url(redis_url)
            commands, masters = int(client.info("stats")["total_commands_processed"]), ()
            client.close()
        with psycopg.connect(database_url, autocommit=True) as db:
            name = db.info.dbname
            commits = db.execute(
                "SELECT xact_commit FROM pg_stat_database WHERE datname = %s", (name,)
            ).fetchone()[0]
            held = db.execute(
                "SELECT count(*) - 1 FROM pg_stat_activity WHERE datname = %s", (name,)
            ).fetchone()[0]  # (the - 1: not this connection)
        return cls(commands, int(commits), int(held), masters)

    def __sub__(self, before: Footprint) -> Footprint:
        masters = tuple(a - b for a, b in zip(self.masters, before.masters, strict=True))
        return Footprint(
            self.redis_commands - before.redis_commands,
            self.transactions - before.transactions,
            self.connections,
            masters,
        )


def _through_pgbouncer(fleet: dict[str, str]) -> str:
    """What PgBouncer served, and a `route replay` over the run's traces through it
    (QuerySet.iterator(): a server-side cursor unless they are disabled)."""
    served = Served.now(fleet["DATABASE_URL"])
    replay = manage(
        "route",
        "replay",
        ROUTE,
        "--workspace",
        WORKSPACE,
        "--version",
        "2",
        "--since",
        "1h",
        env=fleet,
    ).splitlines()[0]
    return (
        f"PgBouncer passed {served.transactions} transactions to the database; at the "
        f"end {served.clients} client connections on {served.servers} server "
        f"connections\n  route replay through it: {replay}"
    )


def prepare(env: dict[str, str], fake: FakeUpstreamProcess, folder: Path) -> list[Caller]:
    """Migrate, apply the catalog with route version 1 deployed and version 2 a draft,
    and make the keys."""
    manage("migrate", "--noinput", env=env)
    for version, mode in ((1, "balanced"), (2, "price")):
        config = folder / f"catalog-v{version}.yaml"
        config.write_text(catalog(fake.base_url, mode))
        manage("apply", "-f", str(config), *(["--deploy"] if version == 1 else []), env=env)
    callers = []
    for name in (*KEYS, OPEN):
        key = manage("createkey", "--workspace", HOMES[name], "--name", name, env=env).strip()
        callers.append(Caller(name, key, ROUTED_MODEL if name == "routed" else MODEL))
    return callers


def catalog(upstream: str, route_mode: str) -> str:
    budget = "{period: daily, usd: 1000}"
    return textwrap.dedent(f"""\
        providers:
          - {{slug: fake, name: Fake, api_style: openai, base_url: "{upstream}",
              api_key_env: {UPSTREAM_KEY_ENV}}}
        models:
          - {{slug: {MODEL}, capabilities: [text], context_window: 8192}}
        endpoints:
          - {{id: rollout-ep, provider: fake, model: {MODEL}, upstream_model: m,
              region: us-east-1, price: {{input: {PRICE_IN}, output: {PRICE_OUT}}}}}
        workspaces:
          - slug: {WORKSPACE}
            name: Rollout
            policy: {{}}
            routes:
              - slug: {ROUTE}
                models: [{ROUTED_MODEL}]
                start: pick
                nodes:
                  pick: {{type: model, model: {MODEL}, mode: {route_mode}}}
            keys:
              - {{name: routed, budget: {budget}, routes: [{ROUTE}]}}
              - {{name: {OPEN}}}
          - slug: {HOMES["budgeted"]}
            name: Rollout budgeted
            policy: {{}}
            keys:
              - {{name: budgeted, budget: {budget}}}
          - slug: {HOMES["limited"]}
            name: Rollout limited
            policy: {{}}
            keys:
              - {{name: limited, budget: {budget},
                  limits: {{requests_per_minute: 100000, tokens_per_minute: 100000000,
                            concurrent: 1000}}}}
        """)


@contextlib.contextmanager
def background(env: dict[str, str], folder: Path) -> Iterator[None]:
    """The Celery worker and beat, for as long as the block runs."""
    celery = [sys.executable, "-m", "celery", "-A", "gateway"]
    commands = {
        "worker": [*celery, "worker", "--loglevel", "WARNING", "--concurrency", "1"],
        "beat": [
            *celery,
            "beat",
            "--loglevel",
            "WARNING",
            "--schedule",
            str(folder / "beat-schedule"),
        ],
    }
    processes = {}
    for name, command in commands.items():
        with open(folder / f"{name}.log", "ab") as log:
            processes[name] = subprocess.Popen(command, env=env, cwd=ROOT, stdout=log, stderr=log)
    try:
        yield
        for name, process in processes.items():
            if process.poll() is not None:
                raise RuntimeError(f"celery {name} exited {process.returncode} during the run")
    finally:
        for process in processes.values():
            process.terminate()
            process.wait(timeout=20)


@contextlib.contextmanager
def balancer(replicas: list[Replica], folder: Path) -> Iterator[str]:
    """HAProxy in front of the replicas; yields the chat completions URL through it."""
    port = free_port()
    servers = "\n".join(f"  server {r.name} 127.0.0.1:{r.port} check" for r in replicas)
    config = folder / "haproxy.cfg"
    # A replica answering /readyz 503 (draining) is out after two checks, 0.5 s, well
    # inside its grace; back after two good ones. A connection that fails or closes
    # without an answer is retried on another replica (no request reached a gateway).
    config.write_text(
        textwrap.dedent(f"""\
        defaults
          mode http
          timeout connect 2s
          timeout client 90s
          timeout server 90s
          retries 3
          option redispatch
          retry-on conn-failure empty-response
        frontend gateway
          bind 127.0.0.1:{port}
          default_backend replicas
        backend replicas
          balance roundrobin
          option httpchk GET /readyz
          default-server inter 250ms fall 2 rise 2
        """)
        + servers
        + "\n"
    )
    with open(folder / "haproxy.log", "ab") as log:
        process = subprocess.Popen(["haproxy", "-db", "-f", str(config)], stdout=log, stderr=log)
    try:
        yield f"http://127.0.0.1:{port}/v1/chat/completions"
    finally:
        process.terminate()
        process.wait(timeout=10)


def start(replica: Replica, env: dict[str, str]) -> None:
    command = [sys.executable, str(ROOT / "manage.py"), "serve", "--port", str(replica.port)]
    with open(replica.log, "ab") as log:
        replica.process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=log, stderr=log)
    _wait(lambda: _ready(replica), f"{replica.name} to be ready", 30)


def stop(replicas: list[Replica]) -> None:
    """SIGTERM the replicas still running and wait for them to drain and exit."""
    running = [r.process for r in replicas if r.process and r.process.poll() is None]
    for process in running:
        process.send_signal(signal.SIGTERM)
    for process in running:
        process.wait(timeout=GRACE_S + DRAIN_S + 15)


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


def restart(replica: Replica, env: dict[str, str]) -> None:
    assert replica.process is not None
    signalled = time.monotonic()
    replica.process.send_signal(signal.SIGTERM)
    code = replica.process.wait(timeout=GRACE_S + DRAIN_S + 15)
    exited = time.monotonic()
    start(replica, env)
    replica.events.append(
        f"SIGTERM, exit {code} after {exited - signalled:.1f} s, "
        f"ready again after {time.monotonic() - exited:.1f} s"
    )
    if code != 0:
        replica.events.append(f"FAILED: exited {code}")


def report(
    outcomes: list[Outcome],
    deployed_s: float,
    replicas: list[Replica],
    fake: FakeUpstreamProcess,
    database_url: str,
    rate: float,
    used: Footprint,
    through: str,
) -> list[str]:
    """Print what the run saw and return the checks that failed."""
    failures = []
    errors = [o for o in outcomes if o.error]
    streams = [o for o in outcomes if o.stream]
    ran_s = max(o.sent_s for o in outcomes)
    pooler = ", on PostgreSQL through PgBouncer (transaction pooling)" if through else ""
    pooler += ", on a Redis Cluster of 3 masters" if used.masters else ""
    print(
        f"rolling restart: 3 replicas behind HAProxy{pooler}, {ran_s:.0f} s at {rate:g} "
        f"requests/s, a quarter streamed: {len(outcomes)} requests"
    )
    print(f"  answered 200: {len(outcomes) - len(errors)}; client errors or resets: {len(errors)}")
    for outcome in errors[:10]:
        print(f"    at {outcome.sent_s:.1f} s, {outcome.caller}: {outcome.error}")
    if errors:
        failures.append(f"{len(errors)} requests failed")
    cut = [o for o in streams if not o.complete]
    print(f"  streams: {len(streams)}, cut short: {len(cut)}")
    slowest = max(o.took_s for o in outcomes)
    print(f"  slowest answer: {slowest:.2f} s")
    n = len(outcomes)
    whose = "the server's, Celery's included"
    if used.masters:
        shares = " + ".join(f"{m / n:.1f}" for m in used.masters)
        whose = f"the cluster's masters', {shares}; Celery's apart"
    print(
        f"  per request: {used.redis_commands / n:.1f} Redis commands ({whose}), "
        f"{used.transactions / n:.2f} PostgreSQL transactions; connections to "
        f"the database at the end: {used.connections}"
    )
    if through:
        print(f"  {through}")
    for replica in replicas:
        print(f"  {replica.name}: " + "; ".join(replica.events))
        failures += [f"{replica.name}: {e}" for e in replica.events if e.startswith("FAILED")]
    with psycopg.connect(database_url, autocommit=True) as db:
        failures += _check_traces(db, outcomes)
        failures += _check_ledger(db, fake)
        failures += _check_route(db, outcomes, deployed_s)
    print("  PASSED" if not failures else "  FAILED: " + "; ".join(failures))
    return failures


def report_outage(
    outcomes: list[Outcome],
    down: Outage,
    fake: FakeUpstreamProcess,
    database_url: str,
    rate: float,
) -> list[str]:
    """Print what each kind of key got before, during and after the outage; return the
    checks that failed: a key with no budget or limit must never fail, a budgeted one
    only with 503 budget_store_unavailable (R-LIM-2: fail closed), no stream may be cut,
    and the traces and ledger must add up once the dependency is back."""
    ran_s = max(o.sent_s for o in outcomes)
    print(
        f"{down.service} down under load: {ran_s:.0f} s at {rate:g} requests/s, "
        f"{len(outcomes)} requests; down from {down.began_s:.1f} s, back at "
        f"{down.ended_s:.1f} s"
    )
    phases = {
        "before": lambda o: o.sent_s < down.began_s,
        "while down": lambda o: down.began_s <= o.sent_s <= down.ended_s,
        "after": lambda o: o.sent_s > down.ended_s,
    }
    kinds = {
        "budgeted keys": lambda o: o.caller != OPEN,
        "the open key": lambda o: o.caller == OPEN,
    }
    for phase, in_phase in phases.items():
        for kind, of_kind in kinds.items():
            seen = Counter(
                f"{o.status} {o.code}".strip() if o.status else o.error
                for o in outcomes
                if in_phase(o) and of_kind(o)
            )
            print(f"  {phase:>10}, {kind}: " + ", ".join(f"{n} × {s}" for s, n in seen.items()))
    failures = []
    wrong = [
        o
        for o in outcomes
        if o.status != 200 and (o.caller == OPEN or o.code != "budget_store_unavailable")
    ]
    for outcome in wrong[:10]:
        print(f"    at {outcome.sent_s:.1f} s, {outcome.caller}: {outcome.error}")
    if wrong:
        failures.append(f"{len(wrong)} requests failed other than closed budgets")
    refused_after = [o.sent_s for o in outcomes if o.status != 200 and o.sent_s > down.ended_s]
    recovered_s = max(refused_after, default=down.ended_s) - down.ended_s
    print(f"  the last refusal was sent {recovered_s:.1f} s after {down.service} was back")
    cut = [o for o in outcomes if o.stream and o.status == 200 and not o.complete]
    print(f"  streams cut short: {len(cut)}")
    if cut:
        failures.append(f"{len(cut)} streams cut short")
    with psycopg.connect(database_url, autocommit=True) as db:
        failures += _check_traces(db, outcomes)
        failures += _check_ledger(db, fake)
    print("  PASSED" if not failures else "  FAILED: " + "; ".join(failures))
    return failures


def _check_traces(db: psycopg.Connection, outcomes: list[Outcome]) -> list[str]:
    sent = {o.trace_id for o in outcomes if o.trace_id}
    missing_id = sum(1 for o in outcomes if not o.trace_id)

    def stored() -> int:
        return db.execute("SELECT count(*) FROM audit_requesttrace").fetchone()[0]

    _wait(lambda: stored() >= len(sent), "every trace to be stored", SETTLE_TIMEOUT_S, fail=False)
    rows = {str(r[0]) for r in db.execute("SELECT id FROM audit_requesttrace")}
    extra, lost = len(rows - sent), len(sent - rows)
    print(
        f"  traces: {len(rows)} stored for {len(outcomes)} requests; lost {lost}, "
        f"without a trace id {missing_id}, not of a client request {extra}"
    )
    if lost or extra or missing_id:
        return [f"traces: {lost} lost, {missing_id} without an id, {extra} extra"]
    return []


def _check_ledger(db: psycopg.Connection, fake: FakeUpstreamProcess) -> list[str]:
    usage = fake.stats()["usage_by_user"]
    expected = {
        name: usage.get(name, {}).get("prompt_tokens", 0) * PRICE_IN
        + usage.get(name, {}).get("completion_tokens", 0) * PRICE_OUT
        for name in KEYS
    }

    def ledger() -> dict[str, int]:
        found = {}
        for name in KEYS:
            row = db.execute(
                "SELECT coalesce(sum(cost_micros), 0) FROM workspaces_spendentry"
                " WHERE counter LIKE %s",
                (f"key:%:{name}:%",),
            ).fetchone()
            found[name] = int(row[0])
        return found

    _wait(lambda: ledger() == expected, "the ledger to settle", SETTLE_TIMEOUT_S, fail=False)
    found, failures = ledger(), []
    for name in KEYS:
        mark = "=" if found[name] == expected[name] else "≠"
        print(f"  ledger {name}: {found[name]} µ$ {mark} {expected[name]} µ$ the fake reported")
        if found[name] != expected[name]:
            failures.append(f"ledger of {name} off by {found[name] - expected[name]} µ$")
    return failures


def _check_route(db: psycopg.Connection, outcomes: list[Outcome], deployed_s: float) -> list[str]:
    routed = {o.trace_id: o for o in outcomes if o.caller == "routed" and o.trace_id}
    versions = dict(
        db.execute(
            "SELECT id::text, route_version FROM audit_requesttrace WHERE route = %s", (ROUTE,)
        ).fetchall()
    )
    late = [t for t, o in routed.items() if o.sent_s > deployed_s + ROUTE_BOUND_S]
    stale = [t for t in late if versions.get(t) != 2]
    before = [o.sent_s for t, o in routed.items() if versions.get(t) == 1]
    print(
        f"  route deployed at {deployed_s:.1f} s; {len(late)} routed requests sent after "
        f"{deployed_s + ROUTE_BOUND_S:.1f} s, on an older version: {len(stale)}; the last "
        f"on version 1 was sent at {max(before, default=0):.1f} s"
    )
    return [f"{len(stale)} routed requests on an old version"] if stale else []


def _ready(replica: Replica) -> bool:
    assert replica.process is not None
    if replica.process.poll() is not None:
        raise RuntimeError(f"{replica.name} exited {replica.process.returncode}; see its log")
    try:
        return httpx.get(f"http://127.0.0.1:{replica.port}/readyz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def _wait(condition, what: str, timeout_s: float, fail: bool = True) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    if fail:
        raise RuntimeError(f"waited {timeout_s:.0f} s for {what}")
    return False


if __name__ == "__main__":
    main()
