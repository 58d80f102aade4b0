"""The simulator's scenarios (docs/simulation.md) as fault tests against live fake upstreams:
fewer requests, real HTTP, a gateway of its own with health demotion and cooldowns on.
The 429 storm and the dead key are in test_cooldowns_api.py, a slow first byte in
test_failover_api.py; price differences are decided in tests/routing (no faults needed).

Virtual models `duo-adaptive` and `duo-round-robin` (tests/live/installation.py) have two
targets of one endpoint each: acme/tiny on the `cheap` fake and acme/mini on the `pricey` fake."""

from __future__ import annotations

from collections import Counter

import openai
import orjson
import pytest

from gateway.processes import running_gateway

pytestmark = pytest.mark.live

MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture
def guarded(fresh_live, request):
    """A gateway that cools an endpoint down for 2 s after 3 consecutive 5xx, and demotes
    one after 3 errors in 30 s unless the test is marked `no_health` (to see cooldowns
    alone)."""
    unhealthy_errors = "1000000" if request.node.get_closest_marker("no_health") else "3"
    env = fresh_live.own_env(
        SWITCHYARD_UNHEALTHY_ERRORS=unhealthy_errors,
        SWITCHYARD_COOLDOWN_BASE_S="2",
        SWITCHYARD_COOLDOWN_MAX_S="2",
    )
    with running_gateway(env) as gateway:
        yield openai.OpenAI(
            base_url=gateway.base_url, api_key=fresh_live.keys["acme"], max_retries=0
        )


def _attempts(client: openai.OpenAI, model: str) -> list[tuple[str, str]]:
    raw = client.chat.completions.with_raw_response.create(model=model, messages=MESSAGES)
    attempts = orjson.loads(raw.headers["x-switchyard-attempts"])
    return [(a["endpoint"], a["status"]) for a in attempts]


def test_r_exe_5_slow_region_adaptive_steers_to_the_fast_target(guarded, fresh_live):
    # given the `pricey` fake (acme/mini) answers 250 ms late, the `cheap` one at once
    fresh_live.fakes["pricey"].set_faults([{"fault": "latency:250", "times": None}])
    # when
    served = [_attempts(guarded, "duo-adaptive")[-1][0] for _ in range(24)]
    adaptive = Counter(served[4:])  # after each target's first latency sample
    round_robin = Counter(_attempts(guarded, "duo-round-robin")[-1][0] for _ in range(8))
    # then peak-EWMA × in-flight sends the traffic to the fast target; round robin does not
    assert adaptive["cheap-tiny"] >= 18, served
    assert round_robin["pricey-mini"] == 4


def test_r_exe_2_flapping_endpoint_is_demoted_then_tried_last_not_dropped(guarded, fresh_live):
    # given the cheapest llama endpoint fails every other request (503, ok, 503, ok, …)
    flapping = [{"fault": "status:503"}, {"fault": "latency:0"}] * 4
    fresh_live.fakes["cheap"].set_faults(flapping)
    # when
    runs = [_attempts(guarded, "meta/llama-3.3-70b") for _ in range(8)]
    # then the client never sees an error (failover), and after its third error in the
    # window `cheap` is unhealthy: tried last, so requests go to `pricey` first
    assert all(run[-1][1] == "ok" for run in runs)
    errors = [i for i, run in enumerate(runs) if ("cheap-llama", "error") in run]
    assert len(errors) == 3
    after = runs[errors[-1] + 1 :]
    assert after
    assert all(run[0][0] == "pricey-llama" for run in after)


@pytest.mark.no_health
def test_r_exe_3_a_cooling_virtual_target_is_skipped_while_the_other_serves(guarded, fresh_live):
    # given acme/mini (pricey fake) fails three times in a row: a cooldown starts
    fresh_live.fakes["pricey"].set_faults([{"fault": "status:503", "times": 3}])
    runs = [_attempts(guarded, "duo-round-robin") for _ in range(10)]
    # then round robin's later turns for acme/mini (5 of 10) are skipped while it cools
    tried_mini = [run for run in runs if any(e == "pricey-mini" for e, _s in run)]
    assert len(tried_mini) == 3  # the three failing attempts, each failed over
    assert all(run[-1] == ("cheap-tiny", "ok") for run in runs)
