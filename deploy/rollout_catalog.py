"""What the rolling-restart harness (deploy/rollout.py) serves: the catalog it applies
(one fake provider, a model, a route in two versions), the workspaces and their keys, and
`prepare`, which migrates the run's database, applies all that and makes the keys."""

from __future__ import annotations

import textwrap
from pathlib import Path

from deploy.rollout_load import Caller
from fakeupstream.process import FakeUpstreamProcess
from gateway.processes import manage

WORKSPACE, ROUTE, ROUTED_MODEL, MODEL = (
    "rollout",
    "rollout-route",
    "rollout-routed",
    "rollout/model",
)
PRICE_IN, PRICE_OUT = 3, 15  # USD per 1M tokens: a token costs 3 or 15 micro-dollars
KEYS = ("budgeted", "limited", "routed")  # each with a budget of its own
OPEN = "open"  # a key with no budget and no limit: it never asks the admission store
# Each budgeted key in a workspace of its own: on a Redis Cluster their keys lie on three
# masters (the workspaces of a fresh database, ids 1 to 3, hash to three slot ranges).
HOMES = {
    "budgeted": f"{WORKSPACE}-budgeted",
    "limited": f"{WORKSPACE}-limited",
    "routed": WORKSPACE,
    OPEN: WORKSPACE,
}
UPSTREAM_KEY_ENV = "ROLLOUT_UPSTREAM_KEY"


def prepare(env: dict[str, str], fake: FakeUpstreamProcess, folder: Path) -> list[Caller]:
    """Migrate, apply the catalog with route version 1 deployed and version 2 a draft,
    and make the keys."""
    manage("migrate", "--noinput", env=env)
    for version, mode in ((1, "balanced"), (2, "price")):
        config = folder / f"catalog-v{version}.yaml"
        config.write_text(catalog(fake.base_url, mode))
        manage("apply", "-f", str(config), *(["--deploy"] if version == 1 else []), env=env)
    callers = []
    for name in (*KEYS, OPEN):
        key = manage("createkey", "--workspace", HOMES[name], "--name", name, env=env).strip()
        callers.append(Caller(name, key, ROUTED_MODEL if name == "routed" else MODEL))
    return callers


def catalog(upstream: str, route_mode: str) -> str:
    budget = "{period: daily, usd: 1000}"
    return textwrap.dedent(f"""\
        providers:
          - {{slug: fake, name: Fake, api_style: openai, base_url: "{upstream}",
              api_key_env: {UPSTREAM_KEY_ENV}}}
        models:
          - {{slug: {MODEL}, capabilities: [text], context_window: 8192}}
        endpoints:
          - {{id: rollout-ep, provider: fake, model: {MODEL}, upstream_model: m,
              region: us-east-1, price: {{input: {PRICE_IN}, output: {PRICE_OUT}}}}}
        workspaces:
          - slug: {WORKSPACE}
            name: Rollout
            policy: {{}}
            routes:
              - slug: {ROUTE}
                models: [{ROUTED_MODEL}]
                start: pick
                nodes:
                  pick: {{type: model, model: {MODEL}, mode: {route_mode}}}
            keys:
              - {{name: routed, budget: {budget}, routes: [{ROUTE}]}}
              - {{name: {OPEN}}}
          - slug: {HOMES["budgeted"]}
            name: Rollout budgeted
            policy: {{}}
            keys:
              - {{name: budgeted, budget: {budget}}}
          - slug: {HOMES["limited"]}
            name: Rollout limited
            policy: {{}}
            keys:
              - {{name: limited, budget: {budget},
                  limits: {{requests_per_minute: 100000, tokens_per_minute: 100000000,
                            concurrent: 1000}}}}
        """)
