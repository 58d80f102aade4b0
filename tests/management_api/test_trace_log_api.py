"""The management API's request log (SPEC R-OBS-1, R-API-7, D-31): `GET
/api/v1/workspaces/{ws}/traces` with its filters and keyset cursor, and the trace detail
with its decision record. Rows are made in the test database, so every expectation is
computed from exactly the rows the test made."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from audit.models import RequestTrace
from tests.management_api.clients import client_as
from workspaces.models import ApiKey, Workspace

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
MODELS = ("meta/llama", "acme/tiny")
PROVIDERS = ("cheap", "pricey")
STATUSES = (200, 429, 502)
pytestmark = pytest.mark.django_db


def _key(workspace: Workspace, name: str) -> ApiKey:
    return ApiKey.objects.create(workspace=workspace, name=name,
                                 lookup_id=uuid.uuid4().hex[:16], secret_hmac="0" * 64)  # fmt: skip


def _trace(workspace: Workspace, key: ApiKey | None, second: int, **fields: Any) -> RequestTrace:
    attempts = [{"provider": fields.get("provider", "cheap"), "model": "m", "endpoint": "e",
                 "status": "ok", "http_status": 200, "latency_ms": 5, "error": None}]  # fmt: skip
    fields = {"status_code": 200, "requested_model": fields.get("model", "meta/llama"), **fields}
    return RequestTrace.objects.create(
        workspace=workspace, api_key=key, request_id=f"req-{uuid.uuid4().hex[:8]}",
        operation="chat.completions", created_at=T0 + timedelta(seconds=second),
        attempts=attempts, usage={"prompt_tokens": 3, "completion_tokens": 4},
        decision={"request": {"model": "meta/llama"}, "decisions": [{"ordered": ["e"]}]},
        **fields,
    )  # fmt: skip


@pytest.fixture
def acme(db: None) -> Workspace:
    return Workspace.objects.create(slug="acme", name="Acme")


@pytest.fixture
def viewer(acme: Workspace) -> APIClient:
    return client_as(acme, "viewer")


def _all_pages(api: APIClient, path: str, **params: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = {**params, **({"cursor": cursor} if cursor else {})}
        response = api.get(path, query)
        assert response.status_code == 200, response.content
        body = response.json()
        rows.extend(body["data"])
        cursor = body["next_cursor"]
        if cursor is None:
            return rows


trace_rows = st.lists(
    st.tuples(
        st.integers(0, 5),  # second: equal times test the id tiebreak
        st.sampled_from(MODELS),
        st.sampled_from(PROVIDERS),
        st.sampled_from(STATUSES),
        st.sampled_from(["", "hard", "easy"]),
        st.sampled_from(["", "s-1"]),
        st.booleans(),  # made with the `alpha` key (else `beta`)
    ),
    max_size=14,
)
filters = st.fixed_dictionaries(
    {},
    optional={
        "model": st.sampled_from(MODELS),
        "provider": st.sampled_from(PROVIDERS),
        "status": st.sampled_from(STATUSES),
        "tier": st.sampled_from(["hard", "easy"]),
        "session_id": st.just("s-1"),
        "key": st.sampled_from(["alpha", "beta"]),
        "since": st.integers(0, 5),
        "until": st.integers(0, 6),
    },
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=trace_rows, wanted=filters, limit=st.integers(1, 4))
def test_r_obs_1_every_filter_and_page_returns_exactly_the_matching_traces_newest_first(
    acme: Workspace, rows: list[tuple[Any, ...]], wanted: dict[str, Any], limit: int
):
    # given a fresh workspace's traces (the example's own), two keys and another workspace
    workspace = Workspace.objects.create(slug=f"w-{uuid.uuid4().hex[:8]}", name="W")
    alpha, beta = _key(workspace, "alpha"), _key(workspace, "beta")
    made = []
    for second, model, provider, status, tier, session, with_alpha in rows:
        key = alpha if with_alpha else beta
        made.append(_trace(workspace, key, second, model=model, provider=provider,
                           status_code=status, tier=tier, session_id=session))  # fmt: skip
    _trace(Workspace.objects.create(slug=f"o-{uuid.uuid4().hex[:8]}", name="O"), None, 3)
    params = {**wanted, "limit": limit}
    for edge in ("since", "until"):
        if edge in wanted:
            params[edge] = (T0 + timedelta(seconds=wanted[edge])).isoformat()
    # when every page is read
    shown = _all_pages(
        client_as(workspace, "viewer"), f"/api/v1/workspaces/{workspace.slug}/traces", **params
    )

    # then they are exactly the matching traces, newest first, each once
    def matches(t: RequestTrace) -> bool:
        second = (t.created_at - T0).total_seconds()
        return (
            wanted.get("model", t.model) == t.model
            and wanted.get("provider", t.provider) == t.provider
            and wanted.get("status", t.status_code) == t.status_code
            and wanted.get("tier", t.tier) == t.tier
            and wanted.get("session_id", t.session_id) == t.session_id
            and wanted.get("key", t.api_key.name if t.api_key else "")
            == (t.api_key.name if t.api_key else "")
            and second >= wanted.get("since", 0)
            and second < wanted.get("until", 99)
        )

    expected = sorted(
        (t for t in made if matches(t)), key=lambda t: (t.created_at, t.id.hex), reverse=True
    )
    assert [row["id"] for row in shown] == [str(t.id) for t in expected]


def test_r_obs_1_a_row_carries_its_attempt_chain_and_key_but_not_the_decision(acme, viewer):
    key = _key(acme, "bot")
    trace = _trace(acme, key, 1, provider="pricey", tier="hard", route="r", route_version=2)
    [row] = viewer.get("/api/v1/workspaces/acme/traces").json()["data"]
    assert row["id"] == str(trace.id)
    assert row["attempts"][0]["provider"] == "pricey"
    assert row["attempts"][0]["status"] == "ok"
    assert row["api_key"] == {"prefix": f"sk-sy-{key.lookup_id}", "name": "bot"}
    assert (row["tier"], row["route"], row["route_version"]) == ("hard", "r", 2)
    assert (row["prompt_tokens"], row["completion_tokens"]) == (3, 4)
    assert "decision" not in row


def test_r_api_7_the_detail_is_the_decision_record_and_another_workspace_is_a_404(acme, viewer):
    trace = _trace(acme, None, 1)
    other = _trace(Workspace.objects.create(slug="globex", name="G"), None, 1)
    detail = viewer.get(f"/api/v1/workspaces/acme/traces/{trace.id}")
    assert detail.status_code == 200
    assert detail.json()["decision"] == trace.decision
    for missing in (other.id, uuid.uuid4(), "not-a-uuid"):
        response = viewer.get(f"/api/v1/workspaces/acme/traces/{missing}")
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "trace_not_found"


def test_the_request_log_answers_a_bad_query_with_a_400_naming_the_parameter(acme, viewer):
    for params, param in [
        ({"modle": "x"}, "modle"),
        ({"status": "ok"}, "status"),
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-12-01T10:00:00"}, "since"),  # no time zone
        ({"limit": "0"}, "limit"),
        ({"limit": "201"}, "limit"),
        ({"cursor": "bm9wZQ"}, "cursor"),
        ({"trace_id": "123"}, "trace_id"),
    ]:
        response = viewer.get("/api/v1/workspaces/acme/traces", params)
        assert response.status_code == 400, params
        assert response.json()["error"]["param"] == param


def test_the_request_log_needs_a_token_of_the_workspace(acme):
    _trace(acme, None, 1)
    assert APIClient().get("/api/v1/workspaces/acme/traces").status_code == 401
    globex = Workspace.objects.create(slug="globex", name="G")
    assert client_as(globex, "owner").get("/api/v1/workspaces/acme/traces").status_code == 404
