"""No SQL runs per request once the configuration snapshot is warm (ARCHITECTURE.md)."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import orjson
import pytest
from asgiref.sync import async_to_sync
from django.db.backends import utils as db_utils
from django.test import AsyncClient

from gateway import runtime
from gateway.fakeupstream.process import running_fake_upstream
from gateway.upstream_client import close_client
from routing.models import Endpoint, Model, Provider
from workspaces.models import Policy, Workspace
from workspaces.secrets import owner_aad, seal
from workspaces.services import create_api_key


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
    settings.GATEWAY = dataclasses.replace(
        settings.GATEWAY, snapshot_poll_s=3600, trace_flush_s=3600
    )
    runtime.reset()
    with running_fake_upstream("fast", api_key="k") as fake:
        # given a catalog and a key
        sealed = seal("k", owner_aad(None, "p"), settings.SWITCHYARD_ENCRYPTION_KEYS)
        provider = Provider.objects.create(
            slug="p", name="p", base_url=fake.base_url, credential_ciphertext=sealed.ciphertext,
            credential_nonce=sealed.nonce, credential_key_id=sealed.key_id,
        )  # fmt: skip
        model = Model.objects.create(slug="meta/llama-3.3-70b", capabilities=["text"])
        Endpoint.objects.create(
            id="e", provider=provider, model=model, upstream_model="up", region="r",
            price_input=Decimal(1), price_output=Decimal(1),
        )  # fmt: skip
        workspace = Workspace.objects.create(slug="w", name="w")
        Policy.objects.create(workspace=workspace)
        key = create_api_key(workspace, actor="test").plaintext
        body = orjson.dumps(
            {"model": "meta/llama-3.3-70b", "messages": [{"role": "user", "content": "hi"}]}
        )

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
    runtime.reset()
    # then
    assert (warm_status, hot_status) == (200, 200)
    assert queries_during_hot_request == 0
