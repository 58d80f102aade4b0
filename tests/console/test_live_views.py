"""The live metrics page and its data (console/live_views.py, SPEC R-OBS-2, D-30): every
role of the workspace reads it, an outsider gets 404; the numbers are the workspace's own
traces, never another tenant's; `window` and `by` are checked; one query reads the
traces, at most MAX_ROWS of them, and the page says when the cap cut the window."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from audit.models import RequestTrace
from console import live_views
from console.live_series import NOT_ROUTED
from workspaces.models import Workspace

pytestmark = pytest.mark.django_db
TRIED = [{"provider": "cheap", "endpoint": "cheap-llama", "status": "error", "http_status": 500},
         {"provider": "pricey", "endpoint": "pricey-llama", "status": "error",
          "http_status": 502}]  # fmt: skip


def _trace(workspace: Workspace, ago_s: float = 30, **fields: Any) -> RequestTrace:
    served = fields.get("status_code", 200) < 400
    return RequestTrace.objects.create(
        workspace=workspace, request_id=uuid.uuid4().hex, operation="chat.completions",
        requested_model="meta/llama", created_at=timezone.now() - timedelta(seconds=ago_s),
        **{"status_code": 200, "provider": "cheap" if served else "",
           "endpoint": "cheap-llama" if served else "", **fields},
    )  # fmt: skip


@pytest.fixture
def traffic(acme: Workspace, globex: Workspace) -> None:
    """Acme: three served by cheap, a stream served by pricey, one that failed on both,
    one refused before routing, one older than 15 minutes. Globex: its own, never Acme's."""
    for latency_ms in (100, 200, 300):
        _trace(acme, latency_ms=latency_ms)
    _trace(acme, provider="pricey", endpoint="pricey-llama", latency_ms=900, ttfb_ms=120,
           stream=True)  # fmt: skip
    _trace(acme, status_code=502, latency_ms=1500, attempts=TRIED, error_code="upstream_error")
    _trace(acme, status_code=429, latency_ms=2, error_code="rate_limited")
    _trace(acme, ago_s=20 * 60, latency_ms=50)
    for _ in range(4):
        _trace(globex, provider="globex-only", endpoint="globex-ep", status_code=503)


def test_r_obs_2_a_member_sees_exactly_the_workspaces_numbers(people, traffic):
    # when
    response = people["member"].get("/console/acme/live/data?window=15m&by=provider")
    # then
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    data = response.json()
    assert (data["window"], data["by"], data["bucket_s"], data["capped"]) == (
        "15m", "provider", 60, False)  # fmt: skip
    assert data["rows"] == 6
    assert data["groups"] == [NOT_ROUTED, "cheap", "pricey"]
    assert data["totals"] == {
        NOT_ROUTED: {"requests": 1, "error_rate": 0.0, "p50": 2, "p90": 2, "p99": 2,
                     "ttft_p50": None, "share": 1 / 6},
        "cheap": {"requests": 3, "error_rate": 0.0, "p50": 200, "p90": 300, "p99": 300,
                  "ttft_p50": None, "share": 0.5},
        "pricey": {"requests": 2, "error_rate": 0.5, "p50": 900, "p90": 1500, "p99": 1500,
                   "ttft_p50": 120, "share": 1 / 3},
    }  # fmt: skip
    assert len(data["buckets"]) == 15
    assert sum(data["series"]["cheap"]["requests"]) == 3
    assert data["end"] - 60 <= timezone.now().timestamp() < data["end"]


def test_r_obs_2_another_workspaces_traces_are_never_counted(people, traffic):
    for by in ("provider", "endpoint"):
        body = people["owner"].get(f"/console/acme/live/data?window=24h&by={by}").content
        assert b"globex" not in body, by
    theirs = people["outsider"].get("/console/globex/live/data?window=24h").json()
    assert (theirs["rows"], theirs["groups"]) == (4, ["globex-only"])
    assert theirs["totals"]["globex-only"]["error_rate"] == 1.0


def test_r_obs_2_the_window_decides_what_is_counted(people, traffic):
    counted = {w: people["viewer"].get(f"/console/acme/live/data?window={w}").json()["rows"]
               for w in ("15m", "1h", "24h")}  # fmt: skip
    assert counted == {"15m": 6, "1h": 7, "24h": 7}


def test_r_obs_2_by_endpoint_a_failed_request_counts_for_the_endpoint_tried_last(people, traffic):
    data = people["viewer"].get("/console/acme/live/data?by=endpoint").json()
    assert data["groups"] == [NOT_ROUTED, "cheap-llama", "pricey-llama"]
    assert data["totals"]["pricey-llama"]["requests"] == 2
    assert data["totals"]["cheap-llama"]["error_rate"] == 0.0


def test_d_30_every_role_reads_the_live_page_and_an_outsider_gets_404(people, traffic):
    for role, browser in people.items():
        for url in ("/console/acme/live/", "/console/acme/live/data"):
            response = browser.get(url)
            assert response.status_code == (404 if role == "outsider" else 200), (role, url)
            if role == "outsider":
                assert b"cheap" not in response.content, url


def test_d_30_a_signed_out_visitor_is_sent_to_sign_in(acme):
    for url in ("/console/acme/live/", "/console/acme/live/data"):
        response = Client().get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(f"/console/sign-in/?next={url}")


@pytest.mark.parametrize(
    ("query", "param"),
    [("window=7d", "window"), ("window=15", "window"), ("by=model", "by"),
     ("windw=24h", "windw")],
)  # fmt: skip
def test_r_obs_2_a_bad_parameter_is_a_400_that_names_it(people, traffic, query, param):
    # when
    data = people["member"].get(f"/console/acme/live/data?{query}")
    page = people["member"].get(f"/console/acme/live/?{query}")
    # then
    assert data.status_code == 400
    error = data.json()["error"]
    assert (error["param"], error["code"], error["type"]) == (
        param, "invalid_request", "invalid_request_error")  # fmt: skip
    assert f"`{param}`" in error["message"]
    assert page.status_code == 400
    problem = re.search(rb'<p class="problem" role="alert">([^<]+)</p>', page.content)
    assert problem is not None
    assert f"`{param}`".encode() in problem.group(1)
    assert b'id="live"' not in page.content


def test_r_obs_2_an_empty_parameter_is_its_default(people, traffic):
    data = people["member"].get("/console/acme/live/data?window=&by=").json()
    assert (data["window"], data["by"]) == ("15m", "provider")


def test_r_obs_2_the_page_shows_the_totals_and_where_the_charts_get_their_data(people, traffic):
    # when
    response = people["viewer"].get("/console/acme/live/?window=1h&by=provider")
    # then
    assert response.status_code == 200
    body = response.content.decode()
    assert 'data-url="/console/acme/live/data?window=1h&amp;by=provider"' in body
    assert 'data-refresh-s="10"' in body
    assert body.count('class="chart"') == len(live_views.CHARTS)
    row = re.search(r"<tr><td>pricey</td>(.*?)</tr>", body)
    assert row is not None
    cells = re.findall(r'<td class="num">([^<]*)</td>', row.group(1))
    assert cells == ["2", "28.6 %", "50.0 %", "900 ms", "1500 ms", "1500 ms", "120 ms"]
    assert 'id="live-capped" role="status" hidden' in body
    assert '<a href="/console/acme/live/" aria-current="page">Live</a>' in body
    assert re.search(r"<script(?![^>]*\bsrc=)[^>]*>", body) is None  # the CSP: no inline
    assert re.search(r"\sstyle=", body) is None


def test_r_obs_2_the_cap_keeps_the_newest_rows_and_the_page_says_so(acme, people, monkeypatch):
    # given
    for ago_s in (10, 20, 30, 40):
        _trace(acme, ago_s=ago_s)
    monkeypatch.setattr(live_views, "MAX_ROWS", 3)
    # when
    data = people["member"].get("/console/acme/live/data").json()
    page = people["member"].get("/console/acme/live/").content.decode()
    # then
    third = RequestTrace.objects.order_by("-created_at")[2].created_at
    assert (data["rows"], data["capped"], data["max_rows"]) == (3, True, 3)
    assert data["complete_from"] == int(third.timestamp())
    assert 'id="live-capped" role="status">Only the newest 3 requests' in page


def test_r_obs_2_the_live_data_is_a_fixed_number_of_queries(
    acme, people, django_assert_max_num_queries
):
    for i in range(120):
        _trace(acme, ago_s=i * 5, provider=f"p{i % 6}", latency_ms=i)
    for url in ("/console/acme/live/data?window=1h", "/console/acme/live/?window=1h"):
        with django_assert_max_num_queries(5):  # session, user, memberships, workspace, traces
            response = people["viewer"].get(url)
        assert response.status_code == 200
