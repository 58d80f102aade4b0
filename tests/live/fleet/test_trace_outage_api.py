"""Traces survive outages (SPEC R-OBS-1): a gateway whose PostgreSQL — or Redis — goes away
under load (every connection reset, new ones refused, through a proxy only this gateway
uses) keeps serving, and once it is back every served request has exactly one trace. A
database outage is spooled to disk; Redis carries no trace, so its outage must cost none.
On SQLite there is no database server to lose."""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import os
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pytest

from gateway.processes import running_gateway
from tests.outage_proxy import OutageProxy
from tests.waiting import wait_for

pytestmark = pytest.mark.live
on_postgres = pytest.mark.skipif(
    not os.environ.get("DATABASE_URL", "").startswith("postgres"),
    reason="a database outage needs a database server (runs on PostgreSQL)",
)
log = logging.getLogger(__name__)
with_redis = pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs REDIS_URL")
# The outage lasts until the gateway has answered LOAD requests without the service (and,
# for the database, spooled traces); SWITCHYARD_OUTAGE_S makes it last at least that long
# (a soak: docs/observability.md).
OUTAGE_S = float(os.environ.get("SWITCHYARD_OUTAGE_S", "0"))
LOAD = 50  # requests answered before the cut, during the outage and after it
SHARING = "sharing live metrics"  # the job's name in the gateway's log (gateway/scheduler.py)
BODY = {"model": "meta/llama-3.3-70b", "messages": [{"role": "user", "content": "hi"}]}


def _trace_rows(database_url: str, key_name: str) -> tuple[int, int]:
    """(rows, distinct request ids) of the key's traces, read straight from PostgreSQL."""
    import psycopg

    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT count(*), count(DISTINCT t.request_id) FROM audit_requesttrace t "
            "JOIN workspaces_apikey k ON k.id = t.api_key_id WHERE k.name = %s",
            (key_name,),
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def _through(url: str, proxy: OutageProxy) -> str:
    where = urlparse(url)
    auth = f"{where.username}@" if where.username else ""
    return where._replace(netloc=f"{auth}127.0.0.1:{proxy.port}").geturl()


def _count_rows(live, key_name: str) -> tuple[int, int]:
    """(rows, distinct request ids) of the key's traces in the live installation's DB."""
    url = live.env["DATABASE_URL"]
    if url.startswith("postgres"):
        return _trace_rows(url, key_name)
    import sqlite3

    with contextlib.closing(sqlite3.connect(urlparse(url).path)) as conn:
        row = conn.execute(
            "SELECT count(*), count(DISTINCT t.request_id) FROM audit_requesttrace t "
            "JOIN workspaces_apikey k ON k.id = t.api_key_id WHERE k.name = ?",
            (key_name,),
        ).fetchone()
    return int(row[0]), int(row[1])


def _serve_through_outage(live, tmp_path, env_name: str, target_url: str) -> tuple[int, int, float]:
    """Load a dedicated gateway whose `env_name` service goes through a proxy, cut it until
    the gateway has seen it gone (its /healthz, its live-metric sharing failing) and served
    LOAD requests without it (and spooled traces, for the database; for at least OUTAGE_S),
    restore it, stop the load once the gateway has seen it back and served LOAD more; then,
    with the gateway still running, wait until every served request has its trace and the
    spool is drained. Returns (spool files seen mid-outage, requests, seconds it was away)."""
    where = urlparse(target_url)
    proxy = OutageProxy((where.hostname or "127.0.0.1", where.port or 5432))
    key_name = f"outage-{uuid.uuid4().hex[:8]}"
    key = live.manage("createkey", "--workspace", "acme", "--name", key_name).strip()
    spool = tmp_path / "spool"
    env = {**live.own_env(), env_name: _through(target_url, proxy),
           "SWITCHYARD_TRACE_SPOOL_DIR": str(spool),
           # the live-metric sharing, a job on both services, every 0.1 s (not 2.5 s)
           "SWITCHYARD_LIVE_ROLLUP_S": "0.2"}  # fmt: skip
    service = "database" if env_name == "DATABASE_URL" else "redis"
    gateway_log = tmp_path / "gateway.log"
    served: list[int] = []
    stop = threading.Event()
    try:
        with running_gateway(env, log_path=gateway_log) as gateway:
            url = f"{gateway.base_url}/chat/completions"
            headers = {"Authorization": f"Bearer {key}"}
            wait_for(lambda: httpx.get(f"{gateway.base_url}/models", headers=headers,
                                       timeout=10).status_code == 200,
                     "the key to be accepted")  # fmt: skip
            served.append(httpx.post(url, json=BODY, headers=headers, timeout=10).status_code)

            def load() -> None:
                with httpx.Client(timeout=10) as http:
                    while not stop.is_set():
                        served.append(http.post(url, json=BODY, headers=headers).status_code)

            def serving(what: str) -> None:
                """Wait until LOAD more requests have been answered."""
                count = len(served) + LOAD
                wait_for(lambda: len(served) >= count, f"{LOAD} requests answered {what}",
                         timeout_s=30)  # fmt: skip

            with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
                loads = [pool.submit(load) for _ in range(4)]
                try:
                    serving("before the cut")
                    proxy.cut()
                    cut_at = time.monotonic()
                    wait_for(lambda: _check(gateway.url, service) is False,
                             f"the gateway to see its {service} gone", timeout_s=30)  # fmt: skip
                    wait_for(lambda: _logged(gateway_log, f"{SHARING} failed"),
                             "the live-metric sharing to fail", timeout_s=30)  # fmt: skip
                    serving(f"without the {service}")
                    if service == "database":
                        wait_for(lambda: _spooled(spool), "traces spooled", timeout_s=30)
                    wait_for(
                        lambda: time.monotonic() - cut_at >= OUTAGE_S,
                        f"the outage to last {OUTAGE_S} s",
                        timeout_s=OUTAGE_S + 5,
                    )
                    spooled = _spooled(spool)
                    proxy.restore()
                    away_s = time.monotonic() - cut_at
                    wait_for(lambda: _check(gateway.url, service) is True,
                             f"the gateway to see its {service} back", timeout_s=30)  # fmt: skip
                    wait_for(lambda: _logged(gateway_log, f"{SHARING} works again"),
                             "the live-metric sharing to work again", timeout_s=30)  # fmt: skip
                    serving(f"with the {service} back")
                finally:
                    stop.set()
                for finished in loads:
                    finished.result()  # a request that raised fails the test here
            # every request was served, and every trace arrives once
            assert set(served) == {200}, {s: served.count(s) for s in set(served)}
            _every_trace_arrives(live, key_name, served)
            wait_for(lambda: not _spooled(spool), "the spool to be drained", timeout_s=30)
    finally:
        stop.set()
        proxy.close()
    return spooled, len(served), away_s


def _check(gateway_url: str, service: str) -> bool | None:
    """The gateway's own view of `service` (`/healthz`'s check of it)."""
    return httpx.get(f"{gateway_url}/healthz", timeout=10).json()["checks"].get(service)


def _logged(log_path: Path, text: str) -> bool:
    """Whether the gateway has written `text` to its log (gateway/failure_log.py's lines)."""
    return text in log_path.read_text(errors="replace")


def _spooled(spool: Path) -> int:
    """Spool files the gateway has written and not yet drained."""
    return len(list(spool.rglob("*.jsonl")))


def _every_trace_arrives(live, key_name: str, served: list[int]) -> None:
    def arrived() -> tuple[int, int] | None:
        counts = _count_rows(live, key_name)
        return counts if counts[0] >= len(served) else None

    counts = wait_for(arrived, f"a trace of each of the {len(served)} requests",
                      timeout_s=30, interval_s=0.2)  # fmt: skip
    assert counts == (len(served), len(served))  # none lost, none twice


@on_postgres
def test_r_obs_1_no_trace_is_lost_or_doubled_when_postgresql_goes_away_under_load(
    fresh_live, tmp_path
):
    spooled, served, _away_s = _serve_through_outage(
        fresh_live, tmp_path, "DATABASE_URL", fresh_live.env["DATABASE_URL"]
    )
    assert spooled > 0, "the outage spooled nothing: it did not happen"
    log.info("%d requests, each with one trace; %d batches spooled by mid-outage", served, spooled)


@with_redis
def test_r_obs_1_requests_and_traces_go_on_while_redis_is_away(fresh_live, tmp_path):
    _spooled, served, away_s = _serve_through_outage(
        fresh_live, tmp_path, "REDIS_URL", os.environ["REDIS_URL"]
    )
    log.info("%d requests through a %.1f s Redis outage, each with one trace", served, away_s)
