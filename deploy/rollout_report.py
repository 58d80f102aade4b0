"""The rolling-restart harness's verdict (deploy/rollout.py): what the run saw, printed,
and the checks that fail it: client errors, streams cut short, one trace per request, each
key's budget ledger against the usage the fake reported, and the route's new version
served within ROUTE_BOUND_S of its deploy; for `--outage`, what each kind of key got
before, during and after it."""

from __future__ import annotations

from collections import Counter

import psycopg

from deploy.outages import Outage
from deploy.rollout_catalog import KEYS, OPEN, PRICE_IN, PRICE_OUT, ROUTE
from deploy.rollout_fleet import Replica, wait_until
from deploy.rollout_footprint import Footprint
from deploy.rollout_load import Outcome
from fakeupstream.process import FakeUpstreamProcess

# docs/routes.md: every gateway process picks a deploy up within two seconds.
ROUTE_BOUND_S = 2.0
SETTLE_TIMEOUT_S = 60.0  # for the traces and the ledger to reach the database after the load


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

    wait_until(
        lambda: stored() >= len(sent), "every trace to be stored", SETTLE_TIMEOUT_S, fail=False
    )
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

    wait_until(lambda: ledger() == expected, "the ledger to settle", SETTLE_TIMEOUT_S, fail=False)
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
