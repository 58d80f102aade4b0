"""The trace page's view of a decision record (console/trace_view.py, SPEC R-BEY-1): the
answering candidate first among equals, every factor's share drawn to scale, excluded
endpoints grouped by their literal reason, the attempts in order. Pure: no database."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from console.trace_view import attempt_chain, trace_page


def _factor(name: str, contribution: float) -> dict[str, Any]:
    return {"name": name, "value": 1.0, "normalized": 0.5, "weight": 1.0,
            "contribution": contribution}  # fmt: skip


DETAIL: dict[str, Any] = {
    "status_code": 200, "endpoint": "eu-hosted", "model": "meta/llama", "provider": "hosted",
    "operation": "chat.completions", "stream": False, "latency_ms": 90, "cost_usd": 0.0001,
    "api_key": {"name": "bot", "prefix": "sk-sy-abc"}, "created_at": "2026-12-01T10:00:00+00:00",
    "attempts": [
        {"provider": "owned", "endpoint": "eu-owned", "status": "error", "http_status": 429,
         "latency_ms": 30, "error": "rate_limited"},
        {"provider": "hosted", "endpoint": "eu-hosted", "status": "ok", "http_status": 200,
         "latency_ms": 60, "error": None},
    ],
    "decision": {
        "request": {"model": "meta/llama"},
        "decisions": [{
            "model": "meta/llama", "mode": "price", "mode_source": "default",
            "reason": "Routed to meta/llama at hosted.",
            "scored": [
                {"endpoint": "eu-hosted", "score": 0.6, "factors": [_factor("price", 0.6)]},
                {"endpoint": "eu-owned", "score": 0.9,
                 "factors": [_factor("price", 0.45), _factor("latency_p50", 0.45)],
                 "multipliers": [{"name": "health", "value": 0.5}], "demoted": None},
            ],
            "rejected": [{"endpoint": "us-1", "reason": "residency_mismatch"},
                         {"endpoint": "us-2", "reason": "residency_mismatch"},
                         {"endpoint": "tiny", "reason": "context_window"}],
        }],
        "route": {"nodes": [{"node": "plan", "type": "condition", "exit": "then"}]},
    },
}  # fmt: skip


def test_the_attempt_chain_reads_like_the_failover():
    assert attempt_chain(DETAIL["attempts"]) == "owned ✗429 → hosted ✓"
    assert attempt_chain([]) == ""


def test_candidates_rank_by_score_and_the_one_that_answered_is_marked():
    page = trace_page(DETAIL)
    decision = page.decisions[0]
    assert [(c.rank, c.endpoint, c.chosen) for c in decision.candidates] == [
        (1, "eu-owned", False), (2, "eu-hosted", True)]  # fmt: skip
    assert decision.candidates[0].multipliers == (("health", 0.5),)
    assert page.reason == "Routed to meta/llama at hosted."


def test_factor_bars_share_one_scale_across_candidates():
    owned, hosted = trace_page(DETAIL).decisions[0].candidates
    # the widest candidate sums to 0.9: 0.45 is half of it, 0.6 two thirds (to 5 %)
    assert [f.width for f in owned.factors] == [50, 50]
    assert [f.width for f in hosted.factors] == [65]


def test_excluded_endpoints_are_grouped_by_their_literal_reason():
    assert trace_page(DETAIL).decisions[0].excluded == (
        ("context_window", ("tiny",)), ("residency_mismatch", ("us-1", "us-2")))  # fmt: skip


def test_attempts_follow_each_other_on_the_timeline():
    first, second = trace_page(DETAIL).attempts
    assert (first.ok, first.http_status, first.error, first.offset, first.width) == (
        False, 429, "rate_limited", 0, 35)  # fmt: skip
    assert (second.ok, second.offset, second.width) == (True, 35, 65)


def test_a_trace_refused_before_routing_has_an_empty_page():
    page = trace_page({"status_code": 403, "attempts": [], "decision": {}, "operation": "x"})
    assert (page.reason, page.decisions, page.attempts, page.route_nodes) == ("", (), (), ())
    assert ("Status", "403") in page.facts


contributions = st.lists(st.floats(-1, 5, allow_nan=False), min_size=1, max_size=5)
latencies = st.lists(st.integers(0, 100_000), max_size=6)


@given(st.lists(contributions, min_size=1, max_size=4), latencies)
def test_every_bar_is_a_class_the_stylesheet_has(candidates, attempt_ms):
    """The CSP allows no inline style: widths and offsets must be .w0…w100 / .o0…o95."""
    detail = {
        "attempts": [{"status": "ok", "latency_ms": ms} for ms in attempt_ms],
        "decision": {"decisions": [{"scored": [
            {"endpoint": f"e{i}", "score": sum(c), "factors": [_factor("f", x) for x in c]}
            for i, c in enumerate(candidates)]}]},
    }  # fmt: skip
    page = trace_page(detail)
    widths = [f.width for c in page.decisions[0].candidates for f in c.factors]
    widths += [a.width for a in page.attempts]
    assert all(w % 5 == 0 and 0 <= w <= 100 for w in widths)
    assert all(a.offset % 5 == 0 and 0 <= a.offset <= 95 for a in page.attempts)
