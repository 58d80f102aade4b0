"""The three probes answer one question each (R-OPS-2, docs/deployment.md "Probes"):
/livez the process, /readyz its configuration, /healthz its dependencies."""

from __future__ import annotations

import asyncio
import os

import orjson
import pytest
import redis.asyncio as redis
from asgiref.sync import async_to_sync
from django.test import AsyncClient

from gateway.api.readiness import _redis_ok, health_client_name
from gateway.state import runtime
from gateway.state.db_thread import close_connections


async def _probe(path: str) -> tuple[int, dict[str, object]]:
    response = await AsyncClient().get(path)
    return response.status_code, orjson.loads(response.content)


@pytest.fixture
def fresh_runtime():  # type: ignore[no-untyped-def]
    runtime.reset()
    yield
    runtime.reset()
    close_connections()


@pytest.mark.django_db(transaction=True)
def test_readyz_answers_once_the_configuration_is_loaded(fresh_runtime):
    # when a worker that has loaded nothing yet is asked
    status, body = async_to_sync(_probe)("/readyz")
    # then it loads the snapshot and is ready
    assert status == 200
    assert body["status"] == "ok"
    assert isinstance(body["configuration_version"], int)


@pytest.mark.django_db(transaction=True)
def test_a_worker_that_cannot_load_its_configuration_is_alive_but_not_ready(
    fresh_runtime, monkeypatch
):
    # given the database refuses the configuration load
    def unreachable():  # type: ignore[no-untyped-def]
        raise ConnectionError("database away")

    monkeypatch.setattr("gateway.state.snapshot.load_snapshot", unreachable)
    # when
    ready, ready_body = async_to_sync(_probe)("/readyz")
    alive, alive_body = async_to_sync(_probe)("/livez")
    # then the load balancer stops sending it requests, the orchestrator does not restart it
    assert (ready, ready_body) == (
        503,
        {"status": "unavailable", "reason": "configuration not loaded"},
    )
    assert (alive, alive_body) == (200, {"status": "ok"})


def test_livez_asks_no_dependency(monkeypatch):
    # given every database access fails (no django_db mark: pytest-django forbids it too)
    from django.db import connection

    def refused(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("/livez used the database")

    monkeypatch.setattr(connection, "cursor", refused)
    # when
    status, body = async_to_sync(_probe)("/livez")
    # then
    assert (status, body) == (200, {"status": "ok"})


@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs REDIS_URL")
def test_healthz_asks_redis_on_one_connection_however_often_it_is_probed():
    url = os.environ["REDIS_URL"]

    async def probe_and_count() -> tuple[list[bool], int]:
        answers = [await _redis_ok(url, cluster=False) for _ in range(5)]
        clients = await redis.from_url(url).client_list()
        return answers, sum(c["name"] == health_client_name() for c in clients)

    # when a worker is probed five times
    answers, connections = asyncio.run(probe_and_count())
    # then each probe found Redis, and all of them asked it on one connection
    assert answers == [True] * 5
    assert connections == 1
