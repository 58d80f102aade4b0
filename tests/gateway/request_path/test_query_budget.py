"""No SQL runs per request once the configuration snapshot is warm (ARCHITECTURE.md)."""

from __future__ import annotations

import orjson
import pytest
from asgiref.sync import async_to_sync
from django.db.backends import utils as db_utils
from django.test import AsyncClient

from gateway.state import runtime
from gateway.upstream.client import close_client
from tests.gateway.request_path.inprocess import MODEL_A, in_process_gateway


@pytest.fixture
def counted_queries(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every SQL statement from any thread (CaptureQueriesContext sees only one connection)."""
    seen: list[str] = []
    for name in ("execute", "executemany"):
        original = getattr(db_utils.CursorWrapper, name)

        def counting(self, sql, *args, _original=original, **kwargs):  # type: ignore[no-untyped-def]
            seen.append(sql)
            return _original(self, sql, *args, **kwargs)

        monkeypatch.setattr(db_utils.CursorWrapper, name, counting)
    return seen


@pytest.mark.django_db(transaction=True)
def test_warm_chat_request_runs_no_sql(settings, counted_queries):
    with in_process_gateway(settings) as key:
        # given a catalog and a key
        body = orjson.dumps({"model": MODEL_A, "messages": [{"role": "user", "content": "hi"}]})

        async def scenario() -> list[int]:
            client = AsyncClient()
            auth = {"Authorization": f"Bearer {key}"}
            statuses = []
            warm = await client.post(
                "/v1/chat/completions", body, content_type="application/json", headers=auth
            )
            statuses.append(warm.status_code)
            counted_queries.clear()
            hot = await client.post(
                "/v1/chat/completions", body, content_type="application/json", headers=auth
            )
            statuses.append(hot.status_code)
            statuses.append(len(counted_queries))
            await runtime.traces().flush()
            await close_client()
            return statuses

        # when
        warm_status, hot_status, queries_during_hot_request = async_to_sync(scenario)()
    # then
    assert (warm_status, hot_status) == (200, 200)
    assert queries_during_hot_request == 0
