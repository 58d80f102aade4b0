"""Budgets and rate limits hold across replicas (SPEC R-BEY-9, R-POL-2, R-LIM-1): two
gateway processes on one database share what they admit — through Redis when REDIS_URL is
set, through PostgreSQL's counters without it. Requests alternate between the two. On
SQLite without Redis each process keeps its own (the embedded default is one process), so
these are skipped there."""

from __future__ import annotations

import concurrent.futures
import os
import time
from collections import Counter
from decimal import Decimal

import httpx
import pytest

from gateway.processes import running_gateway
from tests.live.installation import Live
from tests.waiting import wait_for

pytestmark = pytest.mark.live

MODEL = "replicas/paced"
CATALOG = f"""\
models:
  - {{slug: {MODEL}, capabilities: [text], context_window: 8192}}
endpoints:
  - {{id: paced-replicas, provider: paced, model: {MODEL}, upstream_model: paced-r,
      region: us-east-1, price: {{input: 1000, output: 1000}}, sovereignty_class: any}}
workspaces:
"""
PROMPT = [{"role": "user", "content": "hi"}]
on_postgres = pytest.mark.skipif(
    not os.environ.get("DATABASE_URL", "").startswith("postgres"),
    reason="budgets shared by replicas without Redis need PostgreSQL",
)
with_redis = pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs REDIS_URL")


def _apply(live: Live, slug: str, section: str) -> str:
    path = live.log_path.parent / f"replicas-{slug}.yaml"
    path.write_text(CATALOG + f"  - slug: {slug}\n    {section}\n")
    live.manage("apply", "-f", str(path))
    return live.manage("createkey", "--workspace", slug).strip()


def _ask(base_url: str, key: str) -> httpx.Response:
    return httpx.post(f"{base_url}/chat/completions", headers={"Authorization": f"Bearer {key}"},
                      json={"model": MODEL, "messages": PROMPT, "max_tokens": 20},
                      timeout=60)  # fmt: skip


def _ready(base_urls: list[str], key: str) -> None:
    """Both replicas' snapshots hold the new key and model."""
    for url in base_urls:

        def ready(url: str = url) -> bool:
            listed = httpx.get(f"{url}/models", headers={"Authorization": f"Bearer {key}"})
            return listed.status_code == 200 and MODEL in listed.text

        wait_for(ready, f"{url} to accept the new key and list {MODEL}", 5)


def _budget_race(live: Live, slug: str, env: dict[str, str], worst_case: int) -> None:
    usd = Decimal(20 * worst_case) / 1_000_000
    key = _apply(live, slug, f"budgets: [{{period: daily, usd: {usd}}}]")
    paced = live.fakes["paced"]
    paced.set_faults([{"fault": "hold", "times": None}])  # admitted ones wait upstream
    env = {**env, **PATIENT}
    with (
        running_gateway(env) as one,
        running_gateway(env) as two,
        concurrent.futures.ThreadPoolExecutor(max_workers=200) as pool,
    ):
        urls = [one.base_url, two.base_url]
        _ready(urls, key)
        answers = [pool.submit(_ask, urls[i % 2], key) for i in range(200)]

        def decided() -> bool:  # each refused, or admitted and held upstream
            return sum(a.done() for a in answers) + paced.stats()["in_flight"] == 200

        # Every request is decided while the admitted ones are held: none has settled,
        # so none gave budget back for another to take.
        wait_for(decided, "all 200 requests to be refused or held upstream", 60)
        held = paced.stats()["in_flight"]
        paced.release()
        statuses = sorted(a.result().status_code for a in answers)
    seen = {status: statuses.count(status) for status in set(statuses)}
    # Exactly the 20 the budget holds are served; every other request is refused before
    # any upstream call: 402, or, failing closed, 503 `budget_store_unavailable` (a Redis
    # call that waited out its pool on a starved worker, on a loaded machine): under a
    # full suite's load a couple of the 180 refusals have been fail-closed 503s, never
    # when this test ran alone; `seen` says which. Never more than 20 served is the
    # guarantee; a few fail-closed refusals under load are allowed.
    assert held == 20, seen
    assert statuses.count(200) == 20, seen
    assert set(seen) <= {200, 402, 503}, seen
    assert statuses.count(503) <= MAX_UNAVAILABLE, seen


# The admitted requests are held upstream until all 200 have been decided, on a loaded
# machine too; their gateways wait for them meanwhile.
PATIENT = {"SWITCHYARD_TTFB_TIMEOUT_S": "60"}
MAX_UNAVAILABLE = 10  # of the 180 refusals (5 %): see _budget_race
WORST_CASE = 25_000  # 5 input tokens + 20 max_tokens at 1000 µ$ (test_budgets_api.py checks)


@with_redis
def test_r_bey_9_two_replicas_sharing_redis_cannot_overspend_a_budget(fresh_live):
    _budget_race(fresh_live, "replicas-redis", fresh_live.env, WORST_CASE)


@on_postgres
def test_r_bey_9_two_replicas_on_postgresql_without_redis_cannot_overspend(fresh_live):
    env = {**fresh_live.own_env(SWITCHYARD_ADMISSION_STORE="database"), "REDIS_URL": ""}
    _budget_race(fresh_live, "replicas-pg", env, WORST_CASE)


@with_redis
def test_r_lim_1_a_60_rpm_key_on_two_replicas_admits_60(fresh_live):
    key = _apply(fresh_live, "replicas-rpm", "limits: {requests_per_minute: 60}")
    fresh_live.fakes["paced"].set_faults([])
    with running_gateway(fresh_live.env) as one, running_gateway(fresh_live.env) as two:
        urls = [one.base_url, two.base_url]
        _ready(urls, key)
        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(max_workers=100) as pool:
            answers = list(pool.map(lambda i: _ask(urls[i % 2], key), range(100)))
        took_s = time.monotonic() - started
    statuses = sorted(a.status_code for a in answers)
    # the minute's allowance at once, plus what refills (one a second) while the 100 arrive
    assert 59 <= statuses.count(200) <= 61 + int(took_s), (Counter(statuses), took_s)
    waits = {int(a.headers["Retry-After"]) for a in answers if a.status_code == 429}
    assert waits
    assert max(waits) <= 2


def _sweep_later(live: Live, after_s: float) -> str:
    """Run the budget sweeper as the other replicas' would, `after_s` from now (a
    controlled clock: a reservation expires a minute after its request's deadline)."""
    # The stores are made, used and closed in one loop, as a process of their own would
    # (the command server runs the next command in the same process: tests/commands.py).
    code = (
        "import asyncio, time; from gateway.state import admission_state\n"
        "from workspaces.models import Workspace\n"
        "ids = list(Workspace.objects.values_list('id', flat=True))\n"
        "async def sweep():\n"
        "    try:\n"
        f"        now = time.time() + {after_s}\n"
        "        return await admission_state.stores().budgets.sweep(now, ids)\n"
        "    finally:\n"
        "        await admission_state.stop(); admission_state.reset()\n"
        "print(len(asyncio.run(sweep())))"
    )
    return live.manage("shell", "--no-imports", "-c", code).strip()


def _shared_store(live: Live) -> bool:
    return bool(live.env.get("REDIS_URL")) or live.env["DATABASE_URL"].startswith("postgres")


def test_r_lim_2_a_gateway_killed_mid_request_leaves_a_reservation_the_sweeper_charges(
    fresh_live,
):
    if not _shared_store(fresh_live):
        pytest.skip("the in-process store of SQLite dies with its process")
    key = _apply(fresh_live, "replicas-killed", "budgets: [{period: daily, usd: 10}]")
    fresh_live.fakes["paced"].set_faults([{"fault": "latency:5000", "times": None}])
    with running_gateway(fresh_live.env, server="uvicorn") as doomed:  # one process
        _ready([doomed.base_url], key)
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            pending = pool.submit(_ask, doomed.base_url, key)
            # it reserved, then called
            wait_for(lambda: fresh_live.fakes["paced"].stats()["requests"],
                     "the request to reach the upstream", 5)  # fmt: skip
            # when the process dies in the middle of the request
            doomed.process.kill()
            doomed.process.wait()
            with pytest.raises(httpx.HTTPError):
                pending.result()
    # then its reservation is still held, and the sweeper charges it in full once expired
    assert _sweep_later(fresh_live, 0) == "0"
    assert _sweep_later(fresh_live, 3600) == "1"
    assert _sweep_later(fresh_live, 3600) == "0"
    code = (
        "from budgets.models import SpendEntry;"
        "print([(e.kind, e.cost_micros) for e in SpendEntry.objects.filter("
        "counter__startswith='ws:').order_by('-at')[:1]])"
    )
    assert fresh_live.manage("shell", "--no-imports", "-c", code).strip() == (
        f"[('expired', {WORST_CASE})]"
    )
