"""What the benchmark runs against: a throw-away database — SQLite in the benchmark's
temporary directory, or with `--store postgres-redis` a PostgreSQL database made for the
run and a Redis key prefix of its own — holding a one-endpoint catalog that points at the
fake upstream (loaded with `manage.py apply -f`), three workspace keys — a plain one, one
with a three-node dynamic route attached (condition → split → model), one with a budget
and rate limits (each measured against the plain key in the same run) — and the
gateway's environment.

Nothing here touches the developer's database or Redis keys.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import yaml

from gateway.processes import base_env, manage

GATEWAY_MODEL = "meta/llama-3.3-70b"
# The same fake answering as an Anthropic-style provider: a Messages request to this model
# is sent as it is and relayed as it comes (the `native` path, gateway/upstream/providers/
# anthropic_native.py).
NATIVE_MODEL = "anthropic/bench-native"
ROUTED_MODEL = "bench-routed"  # a name only the route handles; its model nodes pick GATEWAY_MODEL
ROUTED_KEY_NAME = "routed"
GOVERNED_KEY_NAME = "governed"  # a budget and rate limits no bench run reaches
UPSTREAM_MODEL = "llama-up"
WORKSPACE = "bench"
# The credential the gateway sends upstream; the fake accepts any, but a provider needs one.
UPSTREAM_KEY = "bench-key"
UPSTREAM_KEY_ENV = "SWITCHYARD_BENCH_UPSTREAM_KEY"


@dataclass(frozen=True, slots=True)
class GatewayOptions:
    workers: int
    server: str  # "uvicorn" | "granian"
    transport: str  # "aiohttp" | "httpx", SWITCHYARD_HTTP_TRANSPORT


def bench_env(
    db_path: Path, transport: str, *, database_url: str = "", redis_url: str = ""
) -> dict[str, str]:
    """The environment of every manage.py call and of the gateway.

    Without `database_url` and `redis_url` (the default) Redis and the Celery broker are
    switched off, so that the single-machine setup is what gets measured, whatever the
    developer's .env says.
    """
    return base_env(
        DATABASE_URL=database_url or f"sqlite:///{db_path}",
        LOG_LEVEL="WARNING",
        SWITCHYARD_HTTP_TRANSPORT=transport,
        REDIS_URL=redis_url,
        SWITCHYARD_SHARED_STATE_PREFIX=f"switchyard-bench-{uuid.uuid4().hex[:12]}",
        CELERY_BROKER_URL="",
        **{UPSTREAM_KEY_ENV: UPSTREAM_KEY},
    )


@contextmanager
def postgres_database(admin_url: str, suffix: str = "") -> Iterator[str]:
    """A database made on `admin_url`'s server for one run, dropped after it (`suffix`
    tells apart the databases of one run)."""
    import psycopg

    parsed = urlparse(admin_url)
    name = f"switchyard_bench_{os.getpid()}{suffix}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield parsed._replace(path=f"/{name}").geturl()
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def forget_redis_keys(redis_url: str, prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    keys = list(client.scan_iter(match=f"{prefix}*"))
    if keys:
        client.delete(*keys)
    client.close()


@dataclass(frozen=True, slots=True)
class BenchKeys:
    plain: str
    routed: str  # with the three-node route
    governed: str  # with a budget and rate limits


def prepare_database(env: dict[str, str], upstream_base_url: str, workdir: Path) -> BenchKeys:
    """Migrate the empty database, load the catalog and deploy the route; return a plain
    workspace key, one with the route attached and one with a budget and limits."""
    manage("migrate", "--noinput", env=env)
    config = workdir / "bench-catalog.yaml"
    config.write_text(yaml.safe_dump(catalog(upstream_base_url), sort_keys=False))
    manage("apply", "-f", str(config), "--deploy", env=env)
    plain = manage("createkey", "--workspace", WORKSPACE, env=env).strip()
    routed = manage("createkey", "--workspace", WORKSPACE, "--name", ROUTED_KEY_NAME, env=env)
    governed = manage("createkey", "--workspace", WORKSPACE, "--name", GOVERNED_KEY_NAME, env=env)
    return BenchKeys(plain, routed.strip(), governed.strip())


def catalog(upstream_base_url: str) -> dict[str, object]:
    """One fake upstream as two providers (OpenAI-style for GATEWAY_MODEL, Anthropic-style
    for NATIVE_MODEL), an endpoint each, and one workspace (CONFIG.md shape)."""
    return {
        "providers": [
            {
                "slug": slug,
                "name": slug,
                "api_style": style,
                "base_url": upstream_base_url,
                "api_key_env": UPSTREAM_KEY_ENV,
            }
            for slug, style in (("bench", "openai"), ("bench-anthropic", "anthropic"))
        ],
        "models": [
            {"slug": model, "capabilities": ["text", "tools"], "context_window": 131072}
            for model in (GATEWAY_MODEL, NATIVE_MODEL)
        ],
        "endpoints": [
            {
                "id": endpoint,
                "provider": provider,
                "model": model,
                "upstream_model": UPSTREAM_MODEL,
                "region": "us-east-1",
                "price": {"input": 1, "output": 1},
            }
            for endpoint, provider, model in (
                ("bench-ep", "bench", GATEWAY_MODEL),
                ("bench-native", "bench-anthropic", NATIVE_MODEL),
            )
        ],
        "workspaces": [
            {
                "slug": WORKSPACE,
                "name": WORKSPACE,
                "policy": {},
                "routes": [ROUTE],
                "keys": [{"name": ROUTED_KEY_NAME, "routes": [ROUTE["slug"]]}, _governed()],
            }
        ],
    }


# Checked and charged on every request, never reached: a daily budget and a rate limit far
# beyond what a run sends (docs/budgets.md), so the cost of admission is what is measured —
# on Redis, mostly from a worker's allowances (docs/budgets.md, "Allowances").
# BENCH_GOVERNED_LIMITS=all adds the token and concurrency limits, which give back tokens
# and a lease when each request ends.
GOVERNED = {
    "name": GOVERNED_KEY_NAME,
    "budget": {"period": "daily", "usd": 1_000_000, "alerts": [0.9]},
    "limits": {"requests_per_minute": 100_000_000},
}
ALL_LIMITS = {
    "requests_per_minute": 100_000_000,
    "tokens_per_minute": 10**12,
    "concurrent": 100_000,
}


def _governed() -> dict[str, object]:
    if os.environ.get("BENCH_GOVERNED_LIMITS") == "all":
        return {**GOVERNED, "limits": ALL_LIMITS}
    return GOVERNED


# Three nodes on every request's walk: the condition (no metadata: `else`), the split (by
# session, falling back to the key id), a model node.
ROUTE = {
    "slug": "bench-route",
    "models": [ROUTED_MODEL],
    "start": "plan",
    "nodes": {
        "plan": {
            "type": "condition",
            "field": "metadata.tier",
            "op": "equals",
            "value": "gold",
            "then": "a",
            "else": "split",
        },
        "split": {
            "type": "split",
            "by": "session",
            "branches": [{"weight": 90, "next": "a"}, {"weight": 10, "next": "b"}],
        },
        "a": {"type": "model", "model": GATEWAY_MODEL},
        "b": {"type": "model", "model": GATEWAY_MODEL, "mode": "price"},
    },
}
