"""Instructions per chat request, counted by valgrind's callgrind: an A/B that CPU steal
cannot blur (docs/performance.md). `make bench` measures throughput and latency, which on
this shared machine move by up to 40 % between runs of the same code; an instruction count
moves by well under 1 %.

`python -m bench.instructions [--tree DIR] [--requests N] [--routed]` serves chat requests
in one process (Django's AsyncClient → the gateway's request path → a fake upstream in its
own, uncounted, process), once with N and once with 4N requests after the same warm-up, and
prints (count(4N) − count(N)) / 3N: the cost of one warm request, set-up excluded. The
requests' traces are inserted before the count ends, so their share of the database
thread is in it. `--tree` runs it against another checkout (its own `.venv`), such as the
commit an A/B compares with; the imports below also find the modules of checkouts before
the request path's seven-step layout (5cad628). `--routed` sends them from a key with
bench/stack.py's three-node route attached, and the same catalog's plain key beside it
(the route's cost). Needs
`valgrind` (Debian package); takes about two minutes per tree at N=100.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import re
import subprocess
import sys
import tempfile
from decimal import Decimal
from pathlib import Path

WARM_UP = 50  # requests before counting: snapshot loaded, pools and caches warm
MODEL = "acme/a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--routed", action="store_true", help="from a key with a route")
    parser.add_argument(
        "--governed",
        action="store_true",
        help="from a key with a budget and a rate limit (needs REDIS_URL)",
    )
    args = parser.parse_args()
    if args.governed and not os.environ.get("REDIS_URL"):
        parser.error("--governed counts the Redis admission: set REDIS_URL")
    keys = ["stack-plain"] * (args.routed or args.governed) or ["plain"]
    keys += ["stack-routed"] * args.routed + ["stack-governed"] * args.governed
    for key in keys:
        counts = [_counted(args.tree, n, key) for n in (args.requests, 4 * args.requests)]
        per_request = (counts[1] - counts[0]) / (3 * args.requests)
        kind = {
            "plain": "chat request",
            "stack-plain": "chat request (bench/stack.py catalog)",
            "stack-routed": "chat request from the key with the route",
            "stack-governed": "chat request from the key with a budget and a rate limit",
        }[key]
        print(f"{args.tree}: {per_request / 1e6:.3f} M instructions per {kind}")


def _counted(tree: Path, requests: int, key: str) -> int:
    """Instructions of one process serving WARM_UP + `requests` requests."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        command = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            str(tree / ".venv/bin/python"),
            __file__,
            "--serve",
            str(requests),
            *([key] if key != "plain" else []),
        ]
        prefix = f"bench-instructions-{os.getpid()}"
        env = {**os.environ, "SWITCHYARD_SHARED_STATE_PREFIX": prefix}
        try:
            result = subprocess.run(
                command, cwd=tree, capture_output=True, text=True, check=True, env=env
            )
        finally:
            _forget_redis_keys(prefix)
    match = re.search(r"Collected : (\d+)", result.stderr)
    if match is None:
        raise RuntimeError(f"callgrind printed no count:\n{result.stderr[-2000:]}")
    return int(match.group(1))


def _serve(requests: int, key: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")
    import django

    django.setup()
    from django.db import connection
    from django.test.utils import setup_test_environment

    setup_test_environment()
    name = connection.creation.create_test_db(verbosity=0, keepdb=False)
    try:
        with contextlib.ExitStack() as stack:
            secret, model = (
                _stack_catalog(stack, key) if key != "plain" else (_catalog(stack), MODEL)
            )
            asyncio.run(_requests(secret, model, requests))
    finally:
        connection.creation.destroy_test_db(name, verbosity=0)


def _catalog(stack: contextlib.ExitStack) -> str:
    """A provider on a fake upstream (closed with `stack`), one model, one workspace; the
    workspace key."""
    from django.conf import settings

    try:
        from fakeupstream.process import running_fake_upstream
        from gateway.state import runtime
    except ImportError:  # a checkout before the seven-step layout (5cad628)
        from gateway.fakeupstream.process import running_fake_upstream  # type: ignore[no-redef]

        from gateway import runtime  # type: ignore[no-redef]
    from routing.models import Endpoint, Model, Provider
    from workspaces.models import Policy, Workspace
    from workspaces.secrets import owner_aad, seal
    from workspaces.services import create_api_key

    _quiet_settings()
    runtime.reset()
    upstream = stack.enter_context(running_fake_upstream("fast", api_key="k"))
    sealed = seal("k", owner_aad(None, "p"), settings.SWITCHYARD_ENCRYPTION_KEYS)
    provider = Provider.objects.create(
        slug="p",
        name="p",
        base_url=upstream.base_url,
        credential_ciphertext=sealed.ciphertext,
        credential_nonce=sealed.nonce,
        credential_key_id=sealed.key_id,
    )
    model = Model.objects.create(slug=MODEL, capabilities=["text"])
    Endpoint.objects.create(
        id="e",
        provider=provider,
        model=model,
        upstream_model="up",
        region="r",
        price_input=Decimal(1),
        price_output=Decimal(1),
    )
    workspace = Workspace.objects.create(slug="w", name="w")
    Policy.objects.create(workspace=workspace)
    return create_api_key(workspace, actor="bench").plaintext


def _stack_catalog(stack: contextlib.ExitStack, key: str) -> tuple[str, str]:
    """bench/stack.py's catalog, its route deployed, on a fake upstream (closed with
    `stack`); the key with the route attached and the model name only the route handles
    (`stack-routed`), the key with a budget and a rate limit (`stack-governed`), or a plain
    key (`stack-plain`) and the catalog's model."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: find bench
    from bench.stack import (
        GATEWAY_MODEL,
        GOVERNED_KEY_NAME,
        ROUTED_KEY_NAME,
        ROUTED_MODEL,
        UPSTREAM_KEY_ENV,
        WORKSPACE,
        catalog,
    )
    from fakeupstream.process import running_fake_upstream
    from gateway.state import runtime
    from management_api.config_apply import apply_config
    from workspaces.models import Workspace
    from workspaces.services import create_api_key

    _quiet_settings()
    upstream = stack.enter_context(running_fake_upstream("fast", api_key="k"))
    apply_config(
        catalog(upstream.base_url), actor="bench", environ={UPSTREAM_KEY_ENV: "k"}, deploy=True
    )
    workspace = Workspace.objects.get(slug=WORKSPACE)
    routed = key == "stack-routed"
    name = {"stack-routed": ROUTED_KEY_NAME, "stack-governed": GOVERNED_KEY_NAME}.get(key)
    secret = create_api_key(workspace, name=name, actor="bench").plaintext
    runtime.reset()
    return secret, ROUTED_MODEL if routed else GATEWAY_MODEL


def _quiet_settings() -> None:
    """No snapshot polls and no timed trace flushes inside the count: `_requests` flushes
    the traces itself at the end, so both runs insert theirs the same way."""
    from django.conf import settings

    settings.GATEWAY = dataclasses.replace(
        settings.GATEWAY, snapshot_poll_s=3600, trace_flush_s=3600
    )


async def _requests(key: str, model: str, requests: int) -> None:
    import orjson
    from django.test import AsyncClient

    try:
        from gateway.state import runtime
        from gateway.upstream.client import close_client
    except ImportError:  # a checkout before the seven-step layout (5cad628)
        from gateway.upstream_client import close_client  # type: ignore[no-redef]

        from gateway import runtime  # type: ignore[no-redef]
    client = AsyncClient()
    body = orjson.dumps({"model": model, "messages": [{"role": "user", "content": "hi"}]})
    auth = {"Authorization": f"Bearer {key}"}
    try:
        for _ in range(WARM_UP + requests):
            response = await client.post(
                "/v1/chat/completions", body, content_type="application/json", headers=auth
            )
            if response.status_code != 200:
                raise RuntimeError(response.content)
        await runtime.traces().flush()
        await _settled()
    finally:
        await close_client()


async def _settled() -> None:
    """The budget's settlements made and its ledger rows written inside the count (a
    checkout before budgets has neither)."""
    try:
        from gateway.state import admission_state
    except ImportError:
        return
    await admission_state.stop()  # settlements drained, the ledger written, Redis closed


def _forget_redis_keys(prefix: str) -> None:
    """The counted run's Redis keys, deleted from here: outside the count, whose every
    instruction is the process's (its reservations' `done` markers grow with N)."""
    if not os.environ.get("REDIS_URL"):
        return
    import redis

    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    for name in client.scan_iter(f"{prefix}:*", count=1000):
        client.delete(name)
    client.close()


if __name__ == "__main__":
    if len(sys.argv) in (3, 4) and sys.argv[1] == "--serve":
        _serve(int(sys.argv[2]), key=sys.argv[3] if len(sys.argv) == 4 else "plain")
    else:
        main()
