"""Shared fixtures. Live API tests get one installation per session (see tests/live.py);
each test starts with the fake upstreams reset."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import openai
import pytest
from django.conf import settings

from tests.live import Live, forget_shared_state, live_installation


@pytest.fixture(scope="session", autouse=True)
def _own_shared_state_prefix() -> Iterator[None]:
    """The Redis keys this process's own state writes (in-process gateways, admission
    stores, the rollup's fleet names) go under a prefix of this run's, deleted at its end:
    under the installation's default `switchyard` they outlived the run (session pins,
    budget counters) and would mix with a gateway's on the same Redis. The live
    installations have their own (tests/live.py)."""
    prefix = f"switchyard-test-{uuid.uuid4().hex[:12]}"
    settings.SHARED_STATE_PREFIX = prefix
    yield
    forget_shared_state(prefix)


@pytest.fixture(scope="session")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with live_installation(tmp_path_factory.mktemp("live")) as installation:
        yield installation


@pytest.fixture
def fresh_live(live: Live) -> Live:
    for fake in live.fakes.values():
        fake.reset()
    return live


@pytest.fixture
def client(fresh_live: Live) -> openai.OpenAI:
    """The official SDK pointed at the gateway with the `acme` workspace key; no SDK
    retries, so every attempt the tests see is the gateway's own."""
    return openai.OpenAI(
        base_url=fresh_live.base_url, api_key=fresh_live.keys["acme"], max_retries=0, timeout=20
    )
