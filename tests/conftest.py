"""Shared fixtures. Live API tests get one installation per session (see
tests/live/installation.py); each test starts with the fake upstreams reset."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from django.conf import settings

from tests.live.installation import Live, forget_shared_state, live_installation

TESTS = Path(__file__).parent
# Where tests that start server processes live: the end-to-end suites, and the browser's.
SERVER_SUITES = (TESTS / "live", TESTS / "browser")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything under tests/live/, and every test on the live installation, is `live`:
    `-m "not live"` then leaves out every test that starts a server process. A test on the
    live installation outside tests/live/ (or tests/browser/) fails the collection, so the
    unit folders stay quick.

    Every test gets a node id of its own. schemathesis names its tests by operation
    (`test_x[POST /v1/messages]`) but gives them all the function's node id, and
    pytest-xdist schedules by node id: ten of them ran as one. The id takes the name."""
    misplaced = []
    for item in items:
        on_live = "live" in getattr(item, "fixturenames", ())
        if on_live or item.path.is_relative_to(SERVER_SUITES[0]):
            item.add_marker(pytest.mark.live)
        if on_live and not any(item.path.is_relative_to(d) for d in SERVER_SUITES):
            misplaced.append(item.nodeid)
        if not item.nodeid.endswith(f"::{item.name}"):
            _rename(item, f"{item.nodeid.rpartition('::')[0]}::{item.name}")
    assert not misplaced, f"tests on the live installation belong under tests/live/: {misplaced}"
    seen = Counter(item.nodeid for item in items)
    twice = [nodeid for nodeid, count in seen.items() if count > 1]
    assert not twice, f"tests that share a node id (xdist would run one of them): {twice}"


def _rename(item: pytest.Item, nodeid: str) -> None:
    """pytest has no public way to change a node id; the assertion above catches the day
    this stops working."""
    try:
        from _pytest.nodes import coerce_node_id  # pytest >= 9.1
    except ImportError:
        item._nodeid = nodeid
    else:
        item._id = coerce_node_id(nodeid)


@pytest.fixture(scope="session", autouse=True)
def _quick_password_hashing() -> None:
    """Users made in this process hash their password with one MD5 round instead of
    PBKDF2's million: the console's personas cost 1.5 s per test otherwise. Sign-in and
    its checks work the same; the gateway processes of the live tests keep the real
    hashers (their settings are not this process's)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(scope="session", autouse=True)
def _own_shared_state_prefix() -> Iterator[None]:
    """The Redis keys this process's own state writes (in-process gateways, admission
    stores, the rollup's fleet names) go under a prefix of this run's, deleted at its end:
    under the installation's default `switchyard` they outlived the run (session pins,
    budget counters) and would mix with a gateway's on the same Redis. The live
    installations have their own (tests/live/installation.py)."""
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
