"""A hostile upstream (SPEC D-17, R-OBS-1, D-12): a provider that quotes the credential it
was given and the prompt back in every error — body, headers, a 429's Retry-After, in-band
error frames — as careless real providers do ("Incorrect API key provided: sk-…").

One installation of its own: an echoing fake serving an OpenAI-style, an Anthropic-style
and a BYOK provider, a managed key, a BYOK key and a workspace key that are all canaries,
and a gateway logging at DEBUG. Every response, that log, the traces API and `manage.py
dumpdata` are scanned: no key anywhere; no prompt or completion text outside the response
to the client who sent it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from fakeupstream.process import FakeUpstreamProcess, running_fake_upstream
from gateway.processes import running_gateway
from tests.live.installation import Live

pytestmark = pytest.mark.live

MANAGED_KEY = f"sk-managed-{uuid.uuid4().hex}"
BYOK_KEY = f"sk-byok-{uuid.uuid4().hex}"
COMPLETION = "fake reply from echo"  # the fake's reply text: "This is a fake reply from echo."


@dataclass
class Hostile:
    base_url: str
    fake: FakeUpstreamProcess
    key: str  # the workspace key: a canary too, the client pastes it where it should not
    log_path: Path
    seen: list[str] = field(default_factory=list)  # every response, headers and body
    trace_ids: list[str] = field(default_factory=list)

    def secrets(self) -> list[str]:
        return [MANAGED_KEY, BYOK_KEY, self.key]

    def send(self, path: str, body: dict, *, fault: str | None, stream: bool = False) -> int:
        """One request with `fault` scripted on the echoing fake; keeps what came back."""
        self.fake.set_faults([fault] if fault else [])
        headers = {"Authorization": f"Bearer {self.key}", "X-Api-Key": self.key}
        url = f"{self.base_url}{path}?api_key={self.key}"
        with httpx.stream("POST", url, json=body, headers=headers, timeout=20) as response:
            text = b"".join(response.iter_raw()).decode("utf-8", "replace")
        self.seen.append(f"{response.headers!r}\n{text}")
        if "x-switchyard-trace-id" in response.headers:
            self.trace_ids.append(response.headers["x-switchyard-trace-id"])
        return response.status_code


@pytest.fixture(scope="module")
def hostile(live: Live, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    folder = tmp_path_factory.mktemp("hostile")
    secrets = {"HOSTILE_MANAGED_KEY": MANAGED_KEY, "HOSTILE_BYOK_KEY": BYOK_KEY}
    with (
        running_fake_upstream("fast", name="echo") as fake,
        live.applied(
            f"""
providers:
  - {{slug: echo-oa, name: Echo OA, api_style: openai, base_url: "{fake.base_url}",
      api_key_env: HOSTILE_MANAGED_KEY}}
  - {{slug: echo-an, name: Echo AN, api_style: anthropic, base_url: "{fake.base_url}",
      api_key_env: HOSTILE_MANAGED_KEY}}
  - {{slug: echo-byok, name: Echo BYOK, api_style: openai, base_url: "{fake.base_url}",
      api_key_env: HOSTILE_MANAGED_KEY}}
models:
  - {{slug: hostile/oa, capabilities: [text, tools], context_window: 8192}}
  - {{slug: hostile/an, capabilities: [text, tools], context_window: 8192}}
  - {{slug: hostile/byok, capabilities: [text], context_window: 8192}}
  - {{slug: hostile/embed, capabilities: [embedding], context_window: 8192}}
endpoints:
  - {{id: echo-oa-chat, provider: echo-oa, model: hostile/oa, upstream_model: oa, region: r,
      price: {{input: 1, output: 1}}}}
  - {{id: echo-an-chat, provider: echo-an, model: hostile/an, upstream_model: an, region: r,
      price: {{input: 1, output: 1}}}}
  - {{id: echo-byok-chat, provider: echo-byok, model: hostile/byok, upstream_model: by,
      region: r, price: {{input: 1, output: 1}}}}
  - {{id: echo-oa-embed, provider: echo-oa, model: hostile/embed, upstream_model: em,
      region: r, price: {{input: 1, output: 0}}}}
workspaces:
  - slug: hostile
    name: Hostile
    policy: {{max_attempts: 1}}
    credentials:
      - {{provider: echo-byok, api_key_env: HOSTILE_BYOK_KEY}}
""",
            env_extra=secrets,
        ),
    ):
        key = live.manage("createkey", "--workspace", "hostile").strip()
        log_path = folder / "debug-gateway.log"
        env = live.own_env(LOG_LEVEL="DEBUG", **secrets)
        with running_gateway(env, log_path=log_path) as gateway:
            fake.set_echo(True)
            yield Hostile(gateway.base_url, fake, key, log_path)


def _chat(model: str, prompt: str, key: str, **extra: object) -> dict:
    # The client pastes its own key into the prompt and the `user` field (wrong places).
    content = f"{prompt} — and my key is {key}"
    return {"model": model, "messages": [{"role": "user", "content": content}],
            "user": key, "max_tokens": 5, **extra}  # fmt: skip


ERROR_FAULTS = [
    *("status:400", "status:401", "status:404", "status:422", "status:429", "status:500"),
    *("status:302", "error_event", "error_event:400", "malformed"),
]


def _scan(hostile: Hostile, live: Live, prompt: str) -> None:
    """No key in any response; no key, prompt or completion in the traces API, the DEBUG
    log and the database dump."""
    for seen in hostile.seen:
        for secret in hostile.secrets():
            assert secret not in seen, f"a key reached the client: {seen[:300]}"
            assert secret[6:22] not in seen, f"a key fragment reached the client: {seen[:300]}"
    headers = {"Authorization": f"Bearer {hostile.key}"}
    traces = []
    for trace_id in hostile.trace_ids:
        response = httpx.get(f"{hostile.base_url}/traces/{trace_id}", headers=headers)
        assert response.status_code == 200
        traces.append(response.text)
    stored = {
        "traces API": "\n".join(traces),
        "DEBUG log": hostile.log_path.read_text(),
        "dumpdata": live.manage("dumpdata", "--natural-foreign"),
    }
    assert "configuration snapshot loaded" in stored["DEBUG log"]  # the gateway's real log
    for source, text in stored.items():
        for canary in [*hostile.secrets(), prompt, COMPLETION]:
            assert canary not in text, f"{canary[:20]}… found in the {source}"


@pytest.mark.parametrize("model", ["hostile/oa", "hostile/an", "hostile/byok"])
def test_d_17_chat_errors_from_an_echoing_upstream_leak_no_key_and_store_no_prompt(
    hostile, fresh_live, model
):
    # given a prompt canary of this test, and an upstream that echoes key and prompt
    prompt = f"prompt-canary-{uuid.uuid4().hex}"
    hostile.seen.clear()
    hostile.trace_ids.clear()
    # when every fault is met, streamed and not, plus a success of each kind
    statuses = []
    for stream in (False, True):
        for fault in [*ERROR_FAULTS, None]:
            body = _chat(model, prompt, hostile.key, stream=stream)
            statuses.append(hostile.send("/chat/completions", body, fault=fault, stream=stream))
    # then the requests really failed, and nothing leaked anywhere
    assert statuses.count(200) >= 2
    assert any(s >= 400 for s in statuses)
    _scan(hostile, fresh_live, prompt)


def test_d_17_a_passed_through_upstream_rejection_quotes_the_prompt_but_no_key(hostile, fresh_live):
    # given
    prompt = f"prompt-canary-{uuid.uuid4().hex}"
    hostile.seen.clear()
    hostile.trace_ids.clear()
    # when the upstream rejects the request with a 400 that echoes key and prompt
    status = hostile.send("/chat/completions", _chat("hostile/byok", prompt, hostile.key),
                          fault="status:400")  # fmt: skip
    # then the client sees the upstream's sentence with its own prompt, the key cut out
    assert status == 400
    assert prompt in hostile.seen[0]
    assert "Incorrect API key provided: [redacted]" in hostile.seen[0]
    _scan(hostile, fresh_live, prompt)


def test_d_17_responses_and_embeddings_errors_leak_no_key(hostile, fresh_live):
    # given
    prompt = f"prompt-canary-{uuid.uuid4().hex}"
    hostile.seen.clear()
    hostile.trace_ids.clear()
    responses_body = {"model": "hostile/oa", "input": f"{prompt} {hostile.key}", "user": "u"}
    embeddings_body = {"model": "hostile/embed", "input": f"{prompt} {hostile.key}"}
    # when
    for fault in ["status:400", "status:401", "status:429", "error_event:400", None]:
        hostile.send("/responses", responses_body, fault=fault)
        hostile.send("/responses", {**responses_body, "stream": True}, fault=fault, stream=True)
        hostile.send("/embeddings", embeddings_body, fault=fault)
    # then
    _scan(hostile, fresh_live, prompt)


def test_d_17_retry_after_is_relayed_only_as_a_number(hostile, fresh_live):
    # given an upstream whose 429 carries the credential as its Retry-After
    hostile.seen.clear()
    body = _chat("hostile/oa", "hi", hostile.key)
    hostile.fake.set_faults(["status:429"])
    # when
    response = httpx.post(f"{hostile.base_url}/chat/completions", json=body,
                          headers={"Authorization": f"Bearer {hostile.key}"})  # fmt: skip
    # then our own 503 says when to come back, in whole seconds
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "upstream_unavailable"
    assert response.headers["retry-after"].isdigit()
    assert MANAGED_KEY not in response.text + repr(response.headers)
