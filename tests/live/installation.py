"""A live installation for API tests: fake upstreams, a database of its own, the catalog
applied with `manage.py apply`, keys from `manage.py createkey` (both run by a command
server, tests/commands.py), and the gateway under granian or uvicorn — driven from
outside, the way users drive it."""

from __future__ import annotations

import contextlib
import os
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import httpx
import openai
import yaml

from fakeupstream.process import FakeUpstreamProcess, start_fake_upstream
from gateway.processes import DEFAULT_SERVER, GatewayProcess, base_env, running_gateway
from tests.commands import Commands
from tests.waiting import wait_for

UPSTREAM_KEY = "upstream-secret-key"


def catalog_yaml(fakes: dict[str, FakeUpstreamProcess]) -> str:
    return f"""
providers:
  - {{slug: cheap, name: Cheap, api_style: openai, base_url: "{fakes["cheap"].base_url}",
      api_key_env: LIVE_UPSTREAM_KEY}}
  - {{slug: pricey, name: Pricey, api_style: openai, base_url: "{fakes["pricey"].base_url}",
      api_key_env: LIVE_UPSTREAM_KEY}}
  - {{slug: paced, name: Paced, api_style: openai, base_url: "{fakes["paced"].base_url}",
      api_key_env: LIVE_UPSTREAM_KEY}}
  - {{slug: anthro, name: Anthro, api_style: anthropic, base_url: "{fakes["anthro"].base_url}",
      api_key_env: LIVE_UPSTREAM_KEY}}
models:
  - {{slug: meta/llama-3.3-70b, aliases: [llama-3.3-70b-versatile], capabilities: [text, tools],
      context_window: 131072, version: "3.3"}}
  - {{slug: anthropic/claude-sonnet-4, capabilities: [text, vision, tools], context_window: 200000,
      version: "4"}}
  - {{slug: openai/text-embedding-3-small, capabilities: [embedding], context_window: 8191}}
  - {{slug: acme/tiny, capabilities: [text], context_window: 64}}
  - {{slug: acme/paced, capabilities: [text], context_window: 8192}}
  - {{slug: acme/mini, capabilities: [text], context_window: 8192}}
endpoints:
  - {{id: cheap-llama, provider: cheap, model: meta/llama-3.3-70b, upstream_model: llama-up,
      region: us-east-1, price: {{input: 0.5, output: 0.5}}, sovereignty_class: any}}
  - {{id: pricey-llama, provider: pricey, model: meta/llama-3.3-70b, upstream_model: llama-eu,
      region: eu-west-1, price: {{input: 1.0, output: 1.0}}, sovereignty_class: eu-hosted}}
  - {{id: anthro-sonnet, provider: anthro, model: anthropic/claude-sonnet-4,
      upstream_model: claude-sonnet-4-20250514, region: us-east-1,
      price: {{input: 3, output: 15}}, sovereignty_class: any}}
  - {{id: cheap-embed, provider: cheap, model: openai/text-embedding-3-small,
      upstream_model: text-embedding-3-small, region: us-east-1,
      price: {{input: 0.02, output: 0}}, sovereignty_class: any}}
  - {{id: cheap-tiny, provider: cheap, model: acme/tiny, upstream_model: tiny, region: us-east-1,
      price: {{input: 0.1, output: 0.1}}, sovereignty_class: any}}
  - {{id: paced-ep, provider: paced, model: acme/paced, upstream_model: paced, region: us-east-1,
      price: {{input: 0.1, output: 0.1}}, sovereignty_class: any}}
  - {{id: pricey-mini, provider: pricey, model: acme/mini, upstream_model: mini,
      region: eu-west-1, price: {{input: 0.2, output: 0.2}}, sovereignty_class: eu-hosted}}
virtual_models:
  # two targets of one endpoint each, on different fakes (test_fault_scenarios_api.py)
  - {{slug: duo-adaptive, strategy: adaptive,
      targets: [{{model: acme/tiny}}, {{model: acme/mini}}]}}
  - {{slug: duo-round-robin, strategy: round_robin,
      targets: [{{model: acme/tiny}}, {{model: acme/mini}}]}}
workspaces:
  # `price` orders deterministically (cheapest first), which the failover tests rely on;
  # `balanced` (weighted random) is exercised by workspace `other` and the engine's tests.
  - slug: acme
    name: ACME
    policy: {{max_attempts: 3, routing_mode: price}}
    smart_routing:
      aliases:
        normal: {{easy: meta/llama-3.3-70b, hard: anthropic/claude-sonnet-4, default: easy}}
  - {{slug: euonly, name: EU only, policy: {{allowed_residency: [eu-owned], max_attempts: 3}}}}
  - {{slug: other, name: Other, policy: {{max_attempts: 3}}}}
  # auto routing with the LLM classifier on the cheap fake (R-AUTO-2); its pool is this
  # catalog's text models, so models other tests apply to the shared gateway (whose fakes
  # may have stopped) never become its candidates
  - slug: autoclf
    name: Auto classifier
    policy: {{max_attempts: 3, routing_mode: price}}
    auto_router:
      allowed_models: [meta/llama-3.3-70b, anthropic/claude-sonnet-4, acme/tiny, acme/paced,
                       acme/mini]
      classifier: {{model: meta/llama-3.3-70b, timeout_ms: 1000}}
"""


@contextlib.contextmanager
def live_database() -> Iterator[str]:
    """A DATABASE_URL of a fresh database on the configured server (SQLite by default)."""
    configured = os.environ.get("DATABASE_URL", "")
    if not configured.startswith("postgres"):
        with tempfile.TemporaryDirectory() as folder:
            yield f"sqlite:///{Path(folder) / 'live.sqlite3'}"
        return
    import psycopg

    parsed = urlparse(configured)
    name = f"{parsed.path.lstrip('/') or 'switchyard'}_live_{os.getpid()}"
    admin = parsed._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield parsed._replace(path=f"/{name}").geturl()
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass
class Live:
    gateway: GatewayProcess
    fakes: dict[str, FakeUpstreamProcess]
    env: dict[str, str]
    commands: Commands  # manage.py commands, without a Python start each
    keys: dict[str, str] = field(default_factory=dict)  # workspace slug -> API key
    log_path: Path | None = None  # what the gateway wrote to stdout and stderr

    @property
    def base_url(self) -> str:
        return self.gateway.base_url

    def own_env(self, **extra: str) -> dict[str, str]:
        """The env for a dedicated gateway with settings of its own: its own Redis prefix
        too, so its cooldowns and pins never reach the shared gateway (R-BEY-9)."""
        prefix = f"{self.env['SWITCHYARD_SHARED_STATE_PREFIX']}-{uuid.uuid4().hex[:8]}"
        return {**self.env, "SWITCHYARD_SHARED_STATE_PREFIX": prefix, **extra}

    def manage(self, *args: str, env_extra: dict[str, str] | None = None) -> str:
        return self.commands.manage(*args, env={**self.env, **(env_extra or {})})

    @contextlib.contextmanager
    def applied(self, body: str, env_extra: dict[str, str] | None = None) -> Iterator[None]:
        """`manage.py apply` a test's own catalog (YAML) to the shared gateway, for as long
        as the test needs it. On exit every endpoint it declared is disabled, and this waits
        until /v1/models stops listing its models: their fake upstreams stop with the test,
        and an endpoint left active would draw later tests' requests that may go to any
        model (`auto`, the schema fuzz) to a closed port."""
        path = self.log_path.parent / f"applied-{uuid.uuid4().hex[:8]}.yaml"
        path.write_text(body)
        self.manage("apply", "-f", str(path), env_extra=env_extra)
        try:
            yield
        finally:
            config = yaml.safe_load(body)
            endpoints = [{**e, "status": "disabled"} for e in config.get("endpoints", ())]
            path.write_text(yaml.safe_dump({"endpoints": endpoints}))
            self.manage("apply", "-f", str(path))
            gone = {m["slug"] for m in config.get("models", ())}
            self.wait_for_models_gone(gone)

    def wait_for_models_gone(self, models: set[str], timeout_s: float = 5) -> None:
        """Models whose endpoints are all disabled leave /v1/models within one snapshot poll."""
        client = openai.OpenAI(base_url=self.base_url, api_key=self.keys["acme"], max_retries=0)
        wait_for(
            lambda: not models & {m.id for m in client.models.list()},
            f"{sorted(models)} to leave /v1/models",
            timeout_s,
        )

    def new_key(self, workspace: str, name: str, timeout_s: float = 5) -> str:
        """A key made with `createkey --name`, once the gateway's snapshot has it."""
        key = self.manage("createkey", "--workspace", workspace, "--name", name).strip()
        self.wait_for_key(key, timeout_s)
        return key

    def wait_for_key(self, key: str, timeout_s: float = 5) -> None:
        """A key created while the gateway runs is accepted within one snapshot poll."""
        client = openai.OpenAI(base_url=self.base_url, api_key=key, max_retries=0)

        def accepted() -> bool:
            try:
                client.models.list()
            except openai.AuthenticationError:
                return False
            return True

        wait_for(accepted, "the new key to be accepted by the gateway", timeout_s)

    def wait_for_model(self, client: openai.OpenAI, model: str, timeout_s: float = 5) -> None:
        """Configuration applied while the gateway runs shows up within one snapshot poll."""
        wait_for(
            lambda: model in {m.id for m in client.models.list()},
            f"{model} to appear in /v1/models",
            timeout_s,
        )

    def explain(
        self, key: str, body: dict, base_url: str = "", headers: dict[str, str] | None = None
    ) -> dict:
        """`POST /v1/routing/explain` (of the shared gateway, or of the one at `base_url`):
        the decision a request would get, a dry run that changes no state (D-21)."""
        response = httpx.post(
            f"{base_url or self.base_url}/routing/explain",
            json=body,
            headers={"Authorization": f"Bearer {key}", **(headers or {})},
            timeout=10,
        )
        assert response.status_code == 200, response.text
        return response.json()

    def cooling(self, key: str, model: str, endpoint: str, base_url: str = "") -> bool:
        """Whether the gateway would try `endpoint` after the others for being in cooldown:
        read from explain's decision notes, with no session (which touches no pin)."""
        body = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
        notes = [n for d in self.explain(key, body, base_url)["decisions"] for n in d["notes"]]
        return any(note.startswith("In cooldown") and endpoint in note for note in notes)

    def stored_trace(
        self, trace_id: str, key: str, base_url: str = "", timeout_s: float = 10
    ) -> dict:
        """A request's trace from `GET /v1/traces/{id}` (of the shared gateway, or of the one
        at `base_url`), once the trace writer has stored it: it batches, off the path."""
        url = f"{base_url or self.base_url}/traces/{trace_id}"

        def stored() -> dict | None:
            response = httpx.get(url, headers={"Authorization": f"Bearer {key}"}, timeout=10)
            return response.json() if response.status_code == 200 else None

        return wait_for(stored, f"the trace {trace_id} to be stored", timeout_s)


@contextlib.contextmanager
def live_installation(log_dir: Path) -> Iterator[Live]:
    fakes: dict[str, FakeUpstreamProcess] = {}
    commands = Commands(log_dir)
    try:
        for name in ("cheap", "pricey", "anthro"):
            fakes[name] = start_fake_upstream("fast", name=name, api_key=UPSTREAM_KEY)
        # 20 tokens at 40 tokens/s: a stream that takes half a second to finish.
        fakes["paced"] = start_fake_upstream(
            "fast", name="paced", api_key=UPSTREAM_KEY, tokens_per_s=40
        )
        with live_database() as database_url:
            env = base_env(
                DATABASE_URL=database_url,
                LIVE_UPSTREAM_KEY=UPSTREAM_KEY,
                SWITCHYARD_SNAPSHOT_POLL_S="0.1",
                SWITCHYARD_SECURE_COOKIES="false",  # the console over plain HTTP
                SWITCHYARD_TRACE_FLUSH_S="0.05",
                SWITCHYARD_TRACE_SPOOL_DIR=str(log_dir / "trace-spool"),
                SWITCHYARD_MAX_BODY_BYTES="200000",
                SWITCHYARD_TTFB_TIMEOUT_S="2",
                # Guarded routes are judged every half second (SPEC D-26), not every 30 s.
                SWITCHYARD_ROLLOUT_GUARD_INTERVAL_S="0.5",
                # Tests share one gateway and inject faults on purpose: health demotion,
                # cooldowns and session keeping (unit-tested in tests/routing, and live in
                # gateways of their own) would make their attempt order depend on the tests
                # that ran before.
                SWITCHYARD_UNHEALTHY_ERRORS="1000000",
                SWITCHYARD_COOLDOWN_BASE_S="0",
                SWITCHYARD_SESSION_AFFINITY="false",
                SWITCHYARD_COOLDOWN_MAX_S="0",
                LOG_LEVEL="INFO",
                # Redis state of this installation only: runs and gateways never share it.
                SWITCHYARD_SHARED_STATE_PREFIX=f"switchyard-test-{uuid.uuid4().hex[:12]}",
            )
            commands.manage("migrate", "--noinput", env=env)
            config = log_dir / "live-catalog.yaml"
            config.write_text(catalog_yaml(fakes))
            commands.manage("apply", "-f", str(config), env=env)
            keys = {
                slug: commands.manage("createkey", "--workspace", slug, env=env).strip()
                for slug in ("acme", "euonly", "other", "autoclf")
            }
            log_path = log_dir / "gateway.log"
            server = os.environ.get("SWITCHYARD_TEST_SERVER", DEFAULT_SERVER)
            try:
                with running_gateway(env, log_path=log_path, server=server) as gateway:
                    yield Live(gateway=gateway, fakes=fakes, env=env, keys=keys,
                               log_path=log_path, commands=commands)  # fmt: skip
            finally:
                forget_shared_state(env["SWITCHYARD_SHARED_STATE_PREFIX"])
    finally:
        commands.close()
        for fake in fakes.values():
            fake.stop()


def forget_shared_state(prefix: str) -> None:
    """Delete the Redis keys of this installation and its dedicated gateways (if any)."""
    url = os.environ.get("REDIS_URL", "")
    if not url:
        return
    import redis

    store = redis.Redis.from_url(url)
    keys = list(store.scan_iter(match=f"{prefix}*"))
    if keys:
        store.delete(*keys)
    store.close()
