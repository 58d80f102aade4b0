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
from urllib.parse import urlparse

import httpx
import pytest

from gateway.processes import manage, running_gateway
from tests.outage_proxy import OutageProxy

pytestmark = pytest.mark.live
on_postgres = pytest.mark.skipif(
    not os.environ.get("DATABASE_URL", "").startswith("postgres"),
    reason="a database outage needs a database server (runs on PostgreSQL)",
)
log = logging.getLogger(__name__)
with_redis = pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs REDIS_URL")
OUTAGE_S = float(os.environ.get("SWITCHYARD_OUTAGE_S", "6"))
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


def _serve_through_outage(live, tmp_path, env_name: str, target_url: str) -> tuple[int, int]:
    """Load a dedicated gateway whose `env_name` service goes through a proxy, cut it for
    OUTAGE_S, restore it, stop the load; then, with the gateway still running, wait until
    every served request has its trace. Returns (spool files seen mid-outage, requests)."""
    where = urlparse(target_url)
    proxy = OutageProxy((where.hostname or "127.0.0.1", where.port or 5432))
    key_name = f"outage-{uuid.uuid4().hex[:8]}"
    key = manage("createkey", "--workspace", "acme", "--name", key_name, env=live.env).strip()
    env = {**live.own_env(), env_name: _through(target_url, proxy),
           "SWITCHYARD_TRACE_SPOOL_DIR": str(tmp_path / "spool")}  # fmt: skip
    served: list[int] = []
    stop = threading.Event()
    try:
        with running_gateway(env, log_path=tmp_path / "gateway.log") as gateway:
            url = f"{gateway.base_url}/chat/completions"
            headers = {"Authorization": f"Bearer {key}"}
            deadline = time.monotonic() + 10
            while httpx.post(url, json=BODY, headers=headers, timeout=10).status_code != 200:
                assert time.monotonic() < deadline, "the key never became usable"
                time.sleep(0.1)
            served.append(200)

            def load() -> None:
                with httpx.Client(timeout=10) as http:
                    while not stop.is_set():
                        served.append(http.post(url, json=BODY, headers=headers).status_code)

            with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
                for _ in range(4):
                    pool.submit(load)
                time.sleep(1)
                proxy.cut()
                time.sleep(OUTAGE_S)
                spooled = len(list((tmp_path / "spool").rglob("*.jsonl")))
                proxy.restore()
                time.sleep(1)
                stop.set()
            # every request was served, and every trace arrives once
            assert set(served) == {200}, {s: served.count(s) for s in set(served)}
            _every_trace_arrives(live, key_name, served)
    finally:
        stop.set()
        proxy.close()
    return spooled, len(served)


def _every_trace_arrives(live, key_name: str, served: list[int]) -> None:
    deadline = time.monotonic() + 30
    while (counts := _count_rows(live, key_name))[0] < len(served):
        assert time.monotonic() < deadline, f"{counts[0]} traces of {len(served)} requests"
        time.sleep(0.5)
    assert counts == (len(served), len(served))  # none lost, none twice


@on_postgres
def test_r_obs_1_no_trace_is_lost_or_doubled_when_postgresql_goes_away_under_load(
    fresh_live, tmp_path
):
    spooled, served = _serve_through_outage(
        fresh_live, tmp_path, "DATABASE_URL", fresh_live.env["DATABASE_URL"]
    )
    assert spooled > 0, "the outage spooled nothing: it did not happen"
    log.info("%d requests, each with one trace; %d batches spooled by mid-outage", served, spooled)


@with_redis
def test_r_obs_1_requests_and_traces_go_on_while_redis_is_away(fresh_live, tmp_path):
    _spooled, served = _serve_through_outage(
        fresh_live, tmp_path, "REDIS_URL", os.environ["REDIS_URL"]
    )
    log.info("%d requests through a %.0f s Redis outage, each with one trace", served, OUTAGE_S)
