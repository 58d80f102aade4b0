"""What the benchmark runs against: a throw-away SQLite database holding a one-endpoint
catalog that points at the fake upstream (loaded with `manage.py apply -f`), two workspace
keys — a plain one, and one with a three-node dynamic route attached (condition → split →
model, the route's cost measured against the plain key in the same run) — and the
gateway's environment.

Nothing here touches the developer's database: every `manage.py` call and the gateway
get DATABASE_URL pointing into the benchmark's temporary directory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from gateway.processes import base_env, manage

GATEWAY_MODEL = "meta/llama-3.3-70b"
ROUTED_MODEL = "bench-routed"  # a name only the route handles; its model nodes pick GATEWAY_MODEL
ROUTED_KEY_NAME = "routed"
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


def bench_env(db_path: Path, transport: str) -> dict[str, str]:
    """The environment of every manage.py call and of the gateway.

    Redis and the Celery broker are switched off so that the single-machine setup is what
    gets measured, whatever the developer's .env says.
    """
    return base_env(
        DATABASE_URL=f"sqlite:///{db_path}",
        LOG_LEVEL="WARNING",
        SWITCHYARD_HTTP_TRANSPORT=transport,
        REDIS_URL="",
        CELERY_BROKER_URL="",
        **{UPSTREAM_KEY_ENV: UPSTREAM_KEY},
    )


def prepare_database(env: dict[str, str], upstream_base_url: str, workdir: Path) -> tuple[str, str]:
    """Migrate the empty database, load the catalog and deploy the route; return a plain
    workspace key and one with the route attached."""
    manage("migrate", "--noinput", env=env)
    config = workdir / "bench-catalog.yaml"
    config.write_text(yaml.safe_dump(catalog(upstream_base_url), sort_keys=False))
    manage("apply", "-f", str(config), "--deploy", env=env)
    plain = manage("createkey", "--workspace", WORKSPACE, env=env).strip()
    routed = manage("createkey", "--workspace", WORKSPACE, "--name", ROUTED_KEY_NAME, env=env)
    return plain, routed.strip()


def catalog(upstream_base_url: str) -> dict[str, object]:
    """One provider, one model, one endpoint and one workspace (CONFIG.md shape)."""
    return {
        "providers": [
            {
                "slug": "bench",
                "name": "bench",
                "api_style": "openai",
                "base_url": upstream_base_url,
                "api_key_env": UPSTREAM_KEY_ENV,
            }
        ],
        "models": [
            {"slug": GATEWAY_MODEL, "capabilities": ["text", "tools"], "context_window": 131072}
        ],
        "endpoints": [
            {
                "id": "bench-ep",
                "provider": "bench",
                "model": GATEWAY_MODEL,
                "upstream_model": UPSTREAM_MODEL,
                "region": "us-east-1",
                "price": {"input": 1, "output": 1},
            }
        ],
        "workspaces": [
            {
                "slug": WORKSPACE,
                "name": WORKSPACE,
                "policy": {},
                "routes": [ROUTE],
                "keys": [{"name": ROUTED_KEY_NAME, "routes": [ROUTE["slug"]]}],
            }
        ],
    }


# Three nodes on every request's walk: the condition (no metadata: `else`), the split (by
# session, falling back to the key id), a model node.
ROUTE = {
    "slug": "bench-route",
    "models": [ROUTED_MODEL],
    "start": "plan",
    "nodes": {
        "plan": {"type": "condition", "field": "metadata.tier", "op": "equals",
                 "value": "gold", "then": "a", "else": "split"},
        "split": {"type": "split", "by": "session",
                  "branches": [{"weight": 90, "next": "a"}, {"weight": 10, "next": "b"}]},
        "a": {"type": "model", "model": GATEWAY_MODEL},
        "b": {"type": "model", "model": GATEWAY_MODEL, "mode": "price"},
    },
}  # fmt: skip
