"""Graceful drain under `switchyard serve` (SPEC R-OPS-3, docs/deployment.md "Drain"): at
SIGTERM /readyz answers 503 while the server still accepts, then the listener closes, the
answer and the stream in flight finish, their traces are written and the process exits 0;
what still runs at the drain deadline is cut and traced as such. Under granian with one
and two workers and under uvicorn."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import openai
import pytest

from fakeupstream.process import FakeUpstreamProcess, free_port, running_fake_upstream
from gateway.processes import ROOT, wait_until_up
from tests.live.installation import Live
from tests.waiting import wait_for

pytestmark = pytest.mark.live

MESSAGES = [{"role": "user", "content": "hi"}]
TOKENS_PER_S = 40
# The grace: long enough that a loaded machine still probes /readyz and /livez inside it.
GRACE_S = 2.5
# Each request in flight lasts 8 s: the grace and the server's own shutdown end well
# before either does, so both are still running when the listener closes.
REQUEST_S = 8


@dataclass
class Drained:
    live: Live
    fake: FakeUpstreamProcess
    key: str


@pytest.fixture(scope="module")
def drained(live: Live) -> Iterator[Drained]:
    with (
        running_fake_upstream("fast", name="drain", tokens_per_s=TOKENS_PER_S) as fake,
        live.applied(f"""
providers:
  - {{slug: drain, name: Drain, base_url: "{fake.base_url}", api_key_env: LIVE_UPSTREAM_KEY}}
models:
  - {{slug: drain/model, capabilities: [text], context_window: 8192}}
endpoints:
  - {{id: drain-ep, provider: drain, model: drain/model, upstream_model: d, region: r,
      price: {{input: 1, output: 1}}}}
workspaces:
  - {{slug: drain, name: Drain, policy: {{max_attempts: 1}}}}
"""),
    ):
        key = live.manage("createkey", "--workspace", "drain").strip()
        yield Drained(live, fake, key)


def serve(live: Live, log: Path, server: str, workers: int, grace_s: float, drain_s: float):
    """`manage.py serve` (the image's CMD) on a port of its own; its Popen once /livez answers."""
    port = free_port()
    env = live.own_env(
        SWITCHYARD_DRAIN_GRACE_SECONDS=str(grace_s),
        SWITCHYARD_DRAIN_SECONDS=str(drain_s),
        SWITCHYARD_TTFB_TIMEOUT_S="30",  # the live installation's 2 s would end the answer
    )
    command = [sys.executable, str(ROOT / "manage.py"), "serve", "--port", str(port),
               "--workers", str(workers), "--server", server]  # fmt: skip
    with open(log, "ab") as out:
        process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=out, stderr=out)
    wait_until_up(f"http://127.0.0.1:{port}/readyz", 30.0, process)
    return process, f"http://127.0.0.1:{port}"


def probe(url: str) -> int | None:
    """The status a probe answers, or None once nothing accepts the connection — refused,
    or, caught in the listener's closing, reset or dropped unanswered."""
    try:
        return httpx.get(url, timeout=2).status_code
    except (httpx.NetworkError, httpx.RemoteProtocolError):
        return None


def answer(client: openai.OpenAI) -> tuple[str, str]:
    raw = client.chat.completions.with_raw_response.create(
        model="drain/model", messages=MESSAGES, max_tokens=5
    )
    return raw.headers["x-switchyard-trace-id"], raw.parse().choices[0].message.content or ""


def stream(client: openai.OpenAI, tokens: int) -> tuple[str, str, str | None]:
    raw = client.chat.completions.with_raw_response.create(
        model="drain/model", messages=MESSAGES, max_tokens=tokens, stream=True
    )
    text, finish = "", None
    for chunk in raw.parse():
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    return raw.headers["x-switchyard-trace-id"], text, finish


@pytest.mark.parametrize(("server", "workers"), [("granian", 1), ("granian", 2), ("uvicorn", 1)])
def test_r_ops_3_sigterm_finishes_what_is_in_flight(drained, tmp_path, server, workers):
    # given a served gateway with an answer and a stream in flight, each lasting REQUEST_S
    drained.fake.reset()
    drained.fake.set_faults([f"latency:{REQUEST_S * 1000}"])  # the answer's, sent first
    process, url = serve(drained.live, tmp_path / "serve.log", server, workers, GRACE_S, 30)
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=drained.key, max_retries=0, timeout=30)
    with ThreadPoolExecutor(2) as pool:
        pending_answer: Future = pool.submit(answer, client)
        wait_for(
            lambda: drained.fake.stats()["requests"] == 1, "the answer to reach the upstream", 15
        )
        pending_stream: Future = pool.submit(stream, client, REQUEST_S * TOKENS_PER_S)
        wait_for(
            lambda: drained.fake.stats()["requests"] == 2, "the stream to reach the upstream", 15
        )
        # when
        process.send_signal(signal.SIGTERM)
        # then readiness fails first, while the server still accepts and lives
        wait_for(lambda: probe(f"{url}/readyz") == 503, "/readyz to say 503", 15)
        assert probe(f"{url}/livez") == 200
        # then the listener closes while both requests still run
        wait_for(lambda: probe(f"{url}/livez") is None, "the listener to close", 15)
        assert not pending_answer.done()
        assert not pending_stream.done()
        # and both finish whole
        answer_trace, content = pending_answer.result(timeout=30)
        stream_trace, text, finish = pending_stream.result(timeout=30)
    assert content
    assert (len(text.split()), finish) == (REQUEST_S * TOKENS_PER_S, "stop")
    assert process.wait(timeout=30) == 0
    for trace_id in (answer_trace, stream_trace):
        trace = drained.live.stored_trace(trace_id, drained.key)
        assert (trace["status_code"], trace["error_code"]) == (200, "")


def test_r_ops_3_what_still_runs_at_the_drain_deadline_is_cut_and_traced(drained, tmp_path):
    # given a stream that would last 10 s, and a drain of 0.5 s grace and 1 s
    drained.fake.reset()
    process, url = serve(drained.live, tmp_path / "serve.log", "granian", 1, 0.5, 1)
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=drained.key, max_retries=0, timeout=30)
    with ThreadPoolExecutor(1) as pool:
        pending: Future = pool.submit(stream, client, 10 * TOKENS_PER_S)
        wait_for(
            lambda: drained.fake.stats()["requests"] == 1, "the stream to reach the upstream", 15
        )
        started = time.monotonic()
        # when
        process.send_signal(signal.SIGTERM)
        # then the process ends at the deadline, not when the stream would have
        assert process.wait(timeout=15) == 0
        assert time.monotonic() - started < 8
        with pytest.raises((openai.APIError, httpx.HTTPError)):
            pending.result(timeout=15)  # the connection closed mid-stream
    rows = drained.live.manage("shell", "--no-imports", "-c", SHOW_LAST_DRAIN_TRACE)
    assert rows.split() == ["200", "drain_deadline"]


# The stream's trace: the client never saw its trace id header's value here.
SHOW_LAST_DRAIN_TRACE = (
    "from audit.models import RequestTrace as T; "
    "t = T.objects.filter(workspace__slug='drain').order_by('-created_at').first(); "
    "print(t.status_code, t.error_code)"
)
