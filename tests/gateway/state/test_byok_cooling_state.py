"""Credential cooldowns and live numbers in the process's state (SPEC R-BEY-7, R-BYOK-1,
R-OBS-2): the observer blames a refused own key on that workspace's credential, never on
the shared endpoint, and `request_state.read(now, caller)` shows the endpoints where that
credential would be used as cooling — to that caller alone; an attempt with the own key
is observed under the credential's series as well as its endpoint's, shown in that
workspace's health only and counted once for the endpoint. The process's real stores, no
gateway, no DB."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from gateway.request_path.caller import Caller
from gateway.request_path.record import RequestRecord, finish
from gateway.state import request_state, runtime
from gateway.state.request_state import AttemptObserver, Effects
from gateway.state.snapshot import CredentialEntry, KeyEntry, Snapshot, WorkspaceEntry
from routing.engine.attempts import Attempt, AttemptFailed
from routing.engine.live import Observation, credential_series
from tests.routing.builders import make_endpoint, make_policy
from workspaces.secrets import Sealed

NOW = 1_767_225_600.0
OWN = make_endpoint(id="own-alpha", provider="vault", model="v/alpha")
OTHER_MODEL = make_endpoint(id="own-beta", provider="vault", model="v/beta")
OTHER_PROVIDER = make_endpoint(id="else-alpha", provider="else", model="v/alpha")
REFUSED = AttemptFailed("http_error", "upstream answered HTTP 401", http_status=401)
ONE_MINUTE = {"base_s": 60.0, "max_s": 60.0}
NO_ATTEMPTS = {"requests": 0, "error_rate": None, "latency_p50_ms": None,
               "latency_p99_ms": None, "ttft_p50_ms": None}  # fmt: skip


def _workspace(pk: int, credential: CredentialEntry | None = None) -> WorkspaceEntry:
    credentials = {"vault": credential} if credential else {}
    return WorkspaceEntry(id=pk, slug=f"ws-{pk}", policy=make_policy(), policy_id=None,
                          retention="none", credentials=credentials, timeouts={})  # fmt: skip


CREDENTIAL = CredentialEntry(Sealed(b"", b"", "k"), models=frozenset({"v/alpha"}),
                             api_key_ids=frozenset({11}))  # fmt: skip
A, B = _workspace(1, CREDENTIAL), _workspace(2)


def _caller(workspace: WorkspaceEntry, key_pk: int) -> Caller:
    snapshot = Snapshot(
        version=1, keys={}, workspaces={1: A, 2: B}, providers={}, models={}, names={},
        endpoints={"v/alpha": (OWN, OTHER_PROVIDER), "v/beta": (OTHER_MODEL,)}, base_urls={},
    )  # fmt: skip
    key = KeyEntry(pk=key_pk, workspace_id=workspace.id, secret_hmac="", expires_at=None)
    return Caller("r-1", snapshot, key, workspace, started_at=NOW)


@pytest.fixture(autouse=True)
def fresh_runtime() -> Iterator[None]:
    runtime.reset()
    yield
    runtime.reset()


def _attempt(observer: AttemptObserver, failure: AttemptFailed | None) -> None:
    observer.started(OWN)
    observer.finished(OWN, None if failure else 12.0, failure)


def test_r_bey_7_a_refused_own_key_cools_the_credential_not_the_endpoint():
    # given an attempt with A's own key, then one with the managed key, on one endpoint
    observer = AttemptObserver(ONE_MINUTE, _caller(A, 11), workspace=A, uses_own=[True, False])
    # when the upstream refuses the own key
    _attempt(observer, REFUSED)
    # then A's credential cools, the endpoint does not
    cooldowns = runtime.cooldowns()
    assert cooldowns.credentials.cooling(A.id, NOW + 1) == {"vault"}
    assert cooldowns.cooling(NOW + 1) == frozenset()
    # and when the managed key is refused too, that is the endpoint's, as before
    _attempt(observer, REFUSED)
    assert cooldowns.cooling(NOW + 1) == {"own-alpha"}


@pytest.mark.parametrize(
    ("_case", "failure", "cools"),
    [
        ("rate limited", AttemptFailed("http_error", "429", http_status=429), True),
        ("does not decrypt", AttemptFailed("no_credential", "no credential"), True),
        ("the request's fault", AttemptFailed("http_error", "400", http_status=400), False),
        ("no answer at all", AttemptFailed("connect_error", "ConnectError"), False),
    ],
)
def test_r_bey_7_what_an_own_key_attempt_blames_on_the_credential(_case, failure, cools):
    observer = AttemptObserver(ONE_MINUTE, _caller(A, 11), workspace=A, uses_own=[True])
    _attempt(observer, failure)
    expected = {"vault"} if cools else frozenset()
    assert runtime.cooldowns().credentials.cooling(A.id, NOW + 1) == expected


def test_r_bey_7_a_success_with_the_own_key_resets_its_failures():
    # given two 5xx (the third would cool it)
    observer = AttemptObserver(ONE_MINUTE, _caller(A, 11), workspace=A, uses_own=[True] * 4)
    server_error = AttemptFailed("http_error", "503", http_status=503)
    _attempt(observer, server_error)
    _attempt(observer, server_error)
    # when it succeeds, then fails once more
    _attempt(observer, None)
    _attempt(observer, server_error)
    # then it does not cool
    assert runtime.cooldowns().credentials.cooling(A.id, NOW + 1) == frozenset()


def test_r_bey_7_read_shows_the_cooling_credentials_endpoints_to_its_workspace_alone():
    # given A's credential (for v/alpha, key 11) cools
    runtime.cooldowns().credentials.failure(A.id, "vault", "http_401", 401, NOW)
    # then for A with that key, the endpoint where its own key would be used cools
    assert request_state.read(NOW + 1, _caller(A, 11)).live.cooling == {"own-alpha"}
    # not where the credential does not apply: another key of A, another workspace
    assert request_state.read(NOW + 1, _caller(A, 12)).live.cooling == frozenset()
    assert request_state.read(NOW + 1, _caller(B, 21)).live.cooling == frozenset()
    # and without a caller only endpoint cooldowns count
    assert request_state.read(NOW + 1).live.cooling == frozenset()


def test_r_bey_7_with_managed_fallback_a_cooling_credential_skips_no_endpoint():
    # given A's credential allows the managed key when it fails, and it cools
    fallback = _workspace(1, replace(CREDENTIAL, managed_fallback=True))
    runtime.cooldowns().credentials.failure(A.id, "vault", "http_401", 401, NOW)
    # then the endpoint stays: the managed key serves it meanwhile
    assert request_state.read(NOW + 1, _caller(fallback, 11)).live.cooling == frozenset()


def test_r_bey_7_health_lists_the_credential_with_its_last_failure():
    runtime.cooldowns().credentials.failure(A.id, "vault", "http_429", 429, NOW, base_s=30)
    assert request_state.credentials_health(A.id, ["vault"], NOW + 1) == {
        "vault": {
            "status": "cooling",
            "cooling_until": "2026-01-01T00:00:30Z",
            "cooling_reason": "rate_limited",
            "last_failure": "http_429",
            "last_failure_at": "2026-01-01T00:00:00Z",
            "recent_failures": 1,
            **NO_ATTEMPTS,
        }
    }
    assert request_state.credentials_health(B.id, [], NOW + 1) == {}


def test_r_bey_7_a_refused_own_key_is_observed_for_its_credential_alone():
    # given a request whose own key was refused on one endpoint, then served elsewhere
    # with the managed key, and another whose own key served
    refused = RequestRecord(operation="chat.completions", attempts=[
        Attempt("vault", "v/alpha", "own-alpha", "error", 401, 40, "HTTP 401",
                own_credential=True, failure_kind="http_error"),
        Attempt("else", "v/alpha", "else-alpha", "ok", 200, 120),
    ])  # fmt: skip
    served = RequestRecord(operation="chat.completions", attempts=[
        Attempt("vault", "v/alpha", "own-alpha", "ok", 200, 80, own_credential=True),
    ])  # fmt: skip
    # when they finish
    first, second = finish(_caller(A, 11), refused, status=200), finish(_caller(A, 11), served,
                                                                        status=200)  # fmt: skip
    # then the refusal is the credential's alone: the shared endpoint is not charged with it
    assert [(e, o.ok) for e, _p, o in first.observations] == [("else-alpha", True)]
    assert [(s, o.ok, o.kind) for s, _p, o in first.credential_observations] == [
        ("ws:1/vault", False, "error"),
    ]
    # and an answer with the own key measures both the endpoint and the credential
    assert [(e, o.latency_ms) for e, _p, o in second.observations] == [("own-alpha", 80.0)]
    assert [(s, o.ok) for s, _p, o in second.credential_observations] == [("ws:1/vault", True)]


@pytest.mark.parametrize(
    ("_case", "kind", "http_status", "blamed"),
    [
        ("refused by the upstream", "http_error", 401, True),
        ("rate limited by the upstream", "http_error", 429, True),
        ("an upstream error", "http_error", 503, True),
        ("a key that does not decrypt", "no_credential", None, True),
        ("no answer", "connect_error", None, False),
        ("too slow", "timeout", None, False),
    ],
)
def test_r_bey_7_which_own_key_failures_are_the_credentials(_case, kind, http_status, blamed):
    attempt = Attempt("vault", "v/alpha", "own-alpha", "error", http_status, 5, "x",
                      own_credential=True, failure_kind=kind)  # fmt: skip
    assert attempt.blames_credential is blamed
    managed = replace(attempt, own_credential=False)
    assert managed.blames_credential is False


def test_r_bey_7_one_workspace_s_refused_key_never_makes_the_shared_endpoint_unhealthy():
    # given A's own key refused five times on the shared endpoint (the endpoint is unhealthy
    # after three errors in its window)
    record = RequestRecord(operation="chat.completions", attempts=[
        Attempt("vault", "v/alpha", "own-alpha", "error", 401, 40, "HTTP 401",
                own_credential=True, failure_kind="http_error"),
    ])  # fmt: skip
    for _ in range(5):
        done = finish(_caller(A, 11), record, status=502)
        request_state.apply(
            Effects(
                observations=done.observations, credential_observations=done.credential_observations
            )
        )
    # then the endpoint every workspace shares is not demoted, while A's credential shows them
    assert "own-alpha" not in runtime.live().state(NOW + 1).unhealthy
    health = request_state.credentials_health(A.id, ["vault"], NOW + 1)["vault"]
    assert (health["requests"], health["error_rate"]) == (5, 1.0)


def test_r_bey_7_a_credentials_numbers_show_to_its_workspace_and_count_once_for_the_endpoint():
    # given two attempts with A's own key on the shared endpoint (one refused), and one
    # with the managed key, as the request path hands them in
    refused = Observation(at=NOW, ok=False, latency_ms=None, tokens_per_s=None)
    served = Observation(at=NOW, ok=True, latency_ms=120.0, tokens_per_s=None)
    own = credential_series(A.id, "vault")
    effects = Effects(
        observations=[("own-alpha", "vault", o) for o in (refused, served, served)],
        credential_observations=[(own, "vault", refused), (own, "vault", served)],
    )
    # when they are applied
    request_state.apply(effects)
    # then A's credential shows its own two attempts
    health = request_state.credentials_health(A.id, ["vault"], NOW + 1)["vault"]
    assert {name: health[name] for name in NO_ATTEMPTS} == {
        "requests": 2, "error_rate": 0.5, "latency_p50_ms": 120.0, "latency_p99_ms": 120.0,
        "ttft_p50_ms": None,
    }  # fmt: skip
    # another workspace's credential for that provider none of them
    other = request_state.credentials_health(B.id, ["vault"], NOW + 1)["vault"]
    assert {name: other[name] for name in NO_ATTEMPTS} == NO_ATTEMPTS
    # and the endpoint counts each of the three attempts once, with no credential series
    shown = runtime.live().by_provider(NOW + 1)
    assert (list(shown), shown["vault"]["requests"]) == (["vault"], 3)
    assert list(shown["vault"]["endpoints"]) == ["own-alpha"]
    assert shown["vault"]["endpoints"]["own-alpha"]["requests"] == 3
