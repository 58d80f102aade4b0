"""Smart tier routing through a live gateway (SPEC R-TIER-1..5, D-8)."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.live

CODE = [{"role": "user", "content": "```py\nx = 1\n```"}]  # code +3: easy, one under hard
HARD = [{"role": "user", "content": "Think hard: what is the root cause?"}]  # keyword +4


def _post(live, messages, headers=None, session="s-1", **extra):
    return httpx.post(
        f"{live.base_url}/chat/completions",
        headers={
            "Authorization": f"Bearer {live.keys['acme']}",
            "X-Session-Id": session,
            **(headers or {}),
        },  # fmt: skip
        json={"model": "normal", "messages": messages, "max_tokens": 5, **extra},
        timeout=10,
    )


def test_r_tier_2_easy_request_goes_to_the_easy_target_with_the_verdict_in_headers(fresh_live):
    response = _post(fresh_live, [{"role": "user", "content": "hi"}], session="easy-1")
    assert response.status_code == 200, response.text
    assert response.json()["model"] == "meta/llama-3.3-70b"
    assert response.headers["x-switchyard-tier"] == "easy"
    assert response.headers["x-switchyard-tier-target"] == "meta/llama-3.3-70b"
    assert response.headers["x-switchyard-tier-score"] == "0"


def test_r_tier_3_escalated_session_stays_hard_after_thanks(fresh_live):
    # given a hard request (effort keyword, +4) in a session
    hard = _post(fresh_live, [{"role": "user", "content": "Think hard: what is the root cause?"}],
                 session="pin-1")  # fmt: skip
    assert hard.headers["x-switchyard-tier"] == "hard"
    assert hard.json()["model"] == "anthropic/claude-sonnet-4"
    # when the same session says thanks
    thanks = _post(fresh_live, [{"role": "user", "content": "thanks!"}], session="pin-1")
    # then it stays on the hard tier (upward-only pin), and says why
    assert thanks.headers["x-switchyard-tier"] == "hard"
    assert thanks.headers["x-switchyard-tier-source"] == "pinned"
    # while another session with the same message is easy
    other = _post(fresh_live, [{"role": "user", "content": "thanks!"}], session="pin-2")
    assert other.headers["x-switchyard-tier"] == "easy"


def test_r_tier_4_headers_force_or_skip_without_touching_the_pin(fresh_live):
    forced = _post(fresh_live, [{"role": "user", "content": "hi"}],
                   headers={"X-Switchyard-Tier": "hard"}, session="force-1")  # fmt: skip
    assert forced.headers["x-switchyard-tier"] == "hard"
    assert forced.headers["x-switchyard-tier-source"] == "forced"
    after = _post(fresh_live, [{"role": "user", "content": "hi"}], session="force-1")
    assert after.headers["x-switchyard-tier"] == "easy"  # the forced request pinned nothing
    off = _post(fresh_live, [{"role": "user", "content": "Think hard about the root cause"}],
                headers={"X-Switchyard-Smart-Routing": "off"}, session="off-1")  # fmt: skip
    assert off.headers["x-switchyard-tier"] == "easy"  # D-8: the alias's default tier
    bad = _post(fresh_live, [{"role": "user", "content": "hi"}],
                headers={"X-Switchyard-Tier": "medium"})  # fmt: skip
    assert bad.status_code == 400
    assert bad.json()["error"]["param"] == "X-Switchyard-Tier"


def test_r_tier_4_verdict_is_in_the_trace_and_explain(fresh_live):
    # given a request that scores just under the threshold, in a session only this test uses
    session = "verdict-trace-1"
    body = {"model": "normal", "messages": CODE, "max_tokens": 5}
    explained = fresh_live.explain(fresh_live.keys["acme"], body, headers={"X-Session-Id": session})
    # when it is sent for real
    sent = _post(fresh_live, CODE, session=session)
    assert sent.status_code == 200, sent.text
    # then the trace records the verdict with each signal's detail, as explain showed it
    trace = fresh_live.stored_trace(sent.headers["x-switchyard-trace-id"], fresh_live.keys["acme"])
    verdict = trace["decision"].get("tier")
    assert verdict == {
        "alias": "normal",
        "target": "meta/llama-3.3-70b",
        "tier": "easy",
        "score": 3,
        "source": "classifier",
        "signals": [{"name": "code", "points": 3, "detail": "fenced code block in message 1"}],
    }
    assert explained["tier"] == verdict
    # and the response headers carry the same verdict (reasons: names and points only)
    assert {
        name: sent.headers[f"x-switchyard-tier{name}"]
        for name in ("", "-score", "-source", "-reasons", "-target")
    } == {
        "": verdict["tier"],
        "-score": str(verdict["score"]),
        "-source": verdict["source"],
        "-reasons": ", ".join(f"{s['name']}+{s['points']}" for s in verdict["signals"]),
        "-target": verdict["target"],
    }
    assert trace["model"] == verdict["target"]


def _tier_series(live) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the switchyard_tier_* metrics on `GET /metrics`, by name and labels."""
    scraped = httpx.get(f"{live.gateway.url}/metrics").text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(scraped)
        if family.name.startswith("switchyard_tier_")
        for sample in family.samples
        if not sample.name.endswith("_created")
    }


def _series(name: str, **labels: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    return name, tuple(sorted(labels.items()))


# The score histogram's bucket bounds (one per integer score 0..22), as /metrics writes them.
SCORE_BUCKETS = [*(f"{score}.0" for score in range(23)), "+Inf"]


def test_r_tier_5_prometheus_counts_tiers_and_scores(fresh_live):
    # given the tier metrics before this test's requests
    before = _tier_series(fresh_live)
    # when an easy request, a session escalated to hard that asks hard again and then
    # says thanks (pinned), and a forced request are sent (sessions only this test uses)
    for messages, headers, session in (
        ([{"role": "user", "content": "hi"}], None, "metrics-easy"),  # easy, score 0
        (HARD, None, "metrics-hard"),  # hard, score 4: the session is newly pinned
        (HARD, None, "metrics-hard"),  # hard, score 4: already pinned, no escalation
        ([{"role": "user", "content": "thanks!"}], None, "metrics-hard"),  # pinned, score 0
        ([{"role": "user", "content": "hi"}], {"X-Switchyard-Tier": "hard"}, "metrics-forced"),
    ):
        response = _post(fresh_live, messages, headers=headers, session=session)
        assert response.status_code == 200, response.text
    # then exactly these series moved, by exactly these amounts
    after = _tier_series(fresh_live)
    moved = {key: value - before.get(key, 0.0) for key, value in after.items()
             if value != before.get(key, 0.0)}  # fmt: skip
    requests = "switchyard_tier_requests_total"
    assert moved == {
        _series(requests, alias="normal", tier="easy", source="classifier"): 1.0,
        _series(requests, alias="normal", tier="hard", source="classifier"): 2.0,
        _series(requests, alias="normal", tier="hard", source="pinned"): 1.0,
        _series(requests, alias="normal", tier="hard", source="forced"): 1.0,
        _series("switchyard_tier_escalations_total", alias="normal"): 1.0,
        # scores 0, 4, 4, 0 (classifier and pinned only; the forced one is not observed)
        _series("switchyard_tier_score_count", alias="normal"): 4.0,
        _series("switchyard_tier_score_sum", alias="normal"): 8.0,
        **{
            _series("switchyard_tier_score_bucket", alias="normal", le=le): 2.0 if i < 4 else 4.0
            for i, le in enumerate(SCORE_BUCKETS)
        },
    }
