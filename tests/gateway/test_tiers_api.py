"""Smart tier routing through a live gateway (SPEC R-TIER-1..5, D-8)."""

from __future__ import annotations

import httpx
import pytest

pytestmark = pytest.mark.live


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
    headers = {"Authorization": f"Bearer {fresh_live.keys['acme']}"}
    body = {"model": "normal", "messages": [{"role": "user", "content": "```py\nx = 1\n```"}]}
    explained = httpx.post(f"{fresh_live.base_url}/routing/explain", headers=headers, json=body)
    tier = explained.json()["tier"]
    assert (tier["tier"], tier["score"], tier["target"]) == ("easy", 3, "meta/llama-3.3-70b")
    assert [s["name"] for s in tier["signals"]] == ["code"]


def test_r_tier_5_prometheus_counts_tiers_and_scores(fresh_live):
    _post(fresh_live, [{"role": "user", "content": "hi"}], session="metrics-1")
    scraped = httpx.get(f"{fresh_live.gateway.url}/metrics").text
    assert 'switchyard_tier_requests_total{alias="normal"' in scraped
    assert 'switchyard_tier_score_bucket{alias="normal"' in scraped
