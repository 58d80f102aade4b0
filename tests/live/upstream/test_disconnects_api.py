"""A client that hangs up, at each phase of a request, and a stream that drips past the
total deadline (SPEC R-EXE-8, D-20): the upstream call is closed within 1 s, as observed
at the fake upstream itself (its running handlers are cancelled when the gateway closes
the connection), and the trace records what happened.

One gateway of its own, with long first-byte and idle timeouts, so that only the
disconnect (or the total deadline) can be what closed the upstream in time."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import orjson
import pytest

from fakeupstream.process import FakeUpstreamProcess, running_fake_upstream
from gateway.processes import running_gateway
from tests.live.installation import Live
from tests.waiting import wait_for

pytestmark = pytest.mark.live

CLOSED_WITHIN_S = 1.0
MESSAGES = [{"role": "user", "content": "hi"}]


@dataclass
class Phases:
    base_url: str
    stall: FakeUpstreamProcess  # a stream's first token after 20 s
    drip: FakeUpstreamProcess  # a token every 300 ms
    keys: dict[str, str]
    live: Live

    def headers(self, workspace: str = "phases", request_id: str = "") -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self.keys[workspace]}"}
        if request_id:
            headers["X-Request-Id"] = request_id
        return headers

    def trace_of(self, request_id: str) -> dict:
        """The stored trace of a request the client never saw an answer to."""

        def stored() -> dict | None:
            rows = orjson.loads(self.live.manage("dumpdata", "audit.requesttrace"))
            return next((row["fields"] for row in rows
                         if row["fields"]["request_id"] == request_id), None)  # fmt: skip

        return wait_for(stored, f"the trace of {request_id} to be stored", 5, interval_s=0.2)


@pytest.fixture(scope="module")
def phases(live: Live) -> Iterator[Phases]:
    with (
        running_fake_upstream("fast", name="stall", ttft_ms=20_000) as stall,
        running_fake_upstream("fast", name="drip", tokens_per_s=3.3) as drip,
        live.applied(f"""
providers:
  - {{slug: stall, name: Stall, base_url: "{stall.base_url}", api_key_env: LIVE_UPSTREAM_KEY}}
  - {{slug: drip, name: Drip, base_url: "{drip.base_url}", api_key_env: LIVE_UPSTREAM_KEY}}
models:
  - {{slug: phase/stall, capabilities: [text], context_window: 8192}}
  - {{slug: phase/drip, capabilities: [text], context_window: 8192}}
endpoints:
  - {{id: stall-ep, provider: stall, model: phase/stall, upstream_model: s, region: r,
      price: {{input: 1, output: 1}}}}
  - {{id: drip-ep, provider: drip, model: phase/drip, upstream_model: d, region: r,
      price: {{input: 1, output: 1}}}}
workspaces:
  - {{slug: phases, name: Phases, policy: {{max_attempts: 1}}}}
  - {{slug: deadline, name: Deadline, policy: {{max_attempts: 1, timeouts: {{total_ms: 1500}}}}}}
"""),
    ):
        keys = {ws: live.manage("createkey", "--workspace", ws).strip()
                for ws in ("phases", "deadline")}  # fmt: skip
        env = live.own_env(SWITCHYARD_TTFB_TIMEOUT_S="30", SWITCHYARD_IDLE_TIMEOUT_S="30")
        with running_gateway(env) as gateway:
            yield Phases(gateway.base_url, stall, drip, keys, live)


def _closed_within(fake: FakeUpstreamProcess, since: float) -> float:
    """Seconds from `since` until the fake has no handler running, failing after 5 s."""
    wait_for(lambda: not fake.stats()["in_flight"], "the upstream call to be closed", 5)
    return time.monotonic() - since


def _hang_up_before_any_answer(phases: Phases, model: str, stream: bool) -> tuple[float, str]:
    request_id = f"hangup-{uuid.uuid4().hex[:12]}"
    body = {"model": model, "messages": MESSAGES, "stream": stream}
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{phases.base_url}/chat/completions", json=body,
                   headers=phases.headers(request_id=request_id),
                   timeout=httpx.Timeout(10, read=0.5))  # fmt: skip
    return time.monotonic(), request_id


@pytest.mark.parametrize(
    ("_case", "fake", "fault", "stream"),
    [
        ("non-stream, before the upstream answered", "drip", "hang", False),
        ("stream, before the upstream sent its headers", "drip", "hang", True),
        ("stream, headers sent, before the first token", "stall", None, True),
    ],
)
def test_r_exe_8_a_client_gone_before_the_answer_closes_the_upstream_within_a_second(
    phases, _case, fake, fault, stream
):
    # given an upstream that has not answered yet
    upstream = getattr(phases, fake)
    upstream.reset()
    upstream.set_faults([fault] if fault else [])
    # when the client hangs up
    closed_at, request_id = _hang_up_before_any_answer(phases, f"phase/{fake}", stream)
    # then the gateway closed the upstream call at once, and the trace says why
    assert _closed_within(upstream, closed_at) < CLOSED_WITHIN_S
    assert upstream.stats()["cancelled"] == 1
    trace = phases.trace_of(request_id)
    assert (trace["status_code"], trace["error_code"]) == (499, "client_disconnected")
    assert trace["attempts"] == [] or trace["attempts"][0]["status"] == "error"


def test_r_exe_8_a_client_gone_mid_stream_closes_the_upstream_within_a_second(phases):
    # given a stream that has begun (a token every 300 ms)
    phases.drip.reset()
    body = {"model": "phase/drip", "messages": MESSAGES, "stream": True, "max_tokens": 50}
    with httpx.stream("POST", f"{phases.base_url}/chat/completions", json=body,
                      headers=phases.headers(), timeout=10) as response:  # fmt: skip
        assert response.status_code == 200
        next(response.iter_raw())
        # when the client hangs up after the first chunk
    closed_at = time.monotonic()
    # then
    assert _closed_within(phases.drip, closed_at) < CLOSED_WITHIN_S
    assert phases.drip.stats()["cancelled"] == 1


def test_d_20_the_total_deadline_ends_a_dripping_stream_with_one_error_event(phases):
    # given a workspace whose requests have 1.5 s in all, and an upstream that sends a
    # token every 300 ms (never idle long enough for the idle timeout)
    phases.drip.reset()
    body = {"model": "phase/drip", "messages": MESSAGES, "stream": True, "max_tokens": 60}
    started = time.monotonic()
    # when the client reads the stream to its end
    with httpx.stream("POST", f"{phases.base_url}/chat/completions", json=body,
                      headers=phases.headers("deadline"), timeout=30) as response:  # fmt: skip
        text = b"".join(response.iter_raw()).decode()
    ended_at = time.monotonic()
    # then it ended at the deadline with exactly one error event and no [DONE]
    assert ended_at - started < 1.5 + CLOSED_WITHIN_S
    events = [line for line in text.split("\n\n") if line.startswith("data: ")]
    errors = [e for e in events if '"error"' in e]
    assert len(errors) == 1
    assert events[-1] == errors[0]
    assert "deadline" in orjson.loads(errors[0][6:])["error"]["message"]
    assert "[DONE]" not in text
    # and the upstream call was closed with it
    assert _closed_within(phases.drip, ended_at) < CLOSED_WITHIN_S
