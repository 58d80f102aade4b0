"""Cooldowns per endpoint (SPEC R-EXE-3, GM): a 429 starts a cooldown of `base_s`,
doubling with each consecutive trigger up to `max_s`; 401, 403 and 404 get `max_s` at
once (a dead key or a model the provider dropped will not heal in seconds); three
consecutive 5xx or network errors start one too. A success resets the endpoint. An
upstream's `Retry-After` is honoured when it is longer. Targets in cooldown are skipped
while any other target is available (routing/engine/decide.py reads `cooling()`).

State per process, like GM's; no I/O; the caller passes the time (wall clock, epoch
seconds: with several replicas a started cooldown is shared as its absolute end, R-BEY-9).
`listener` hears every cooldown this node starts; `apply_remote` takes one another replica
started, without telling the listener again. The failure count and the doubling stay this
node's own: only the end of a cooldown is shared.

A workspace's own provider credential (BYOK) cools by the same rules, for that workspace
alone (SPEC R-BEY-7): `Cooldowns.credentials`, one board per workspace keyed by provider.
Its failures speak of the tenant's key, not of the shared endpoint, so they never cool the
endpoint for the other workspaces. It also keeps each credential's recent failures for
`GET /health` (docs/byok.md).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

DEFAULT_BASE_S = 30.0  # GM's cooldown_base
DEFAULT_MAX_S = 300.0  # GM's cooldown_max (5 min)
SERVER_ERRORS_TO_TRIGGER = 3  # consecutive 5xx / network errors
AT_ONCE_STATUSES = frozenset({401, 403, 404})

# Told of each cooldown this node starts: (endpoint id, until in epoch seconds, reason).
CooldownListener = Callable[[str, float, str], None]

# A BYOK credential that does not decrypt is as dead as one the provider refuses: it
# cools at once for the maximum, like a 401 (it heals only when someone saves it again).
DOES_NOT_DECRYPT = "does_not_decrypt"
RECENT_FAILURES_WINDOW_S = 300.0  # what `/health` counts as recent: its live window (5 min)
MAX_KEPT_FAILURES = 100  # per credential; bounds memory under a storm of failures


@dataclass(slots=True)
class _KeyState:
    """One endpoint's, or one credential's."""

    consecutive_failures: int = 0  # 5xx and network errors since the last success
    triggers: int = 0  # consecutive cooldowns started, for the doubling
    until: float = 0.0  # cooling while now < until
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Cooling:
    until: float  # epoch seconds
    reason: str  # rate_limited | auth_or_not_found | server_errors


@dataclass(frozen=True, slots=True)
class Started:
    """A cooldown that an outcome started: for metrics and logs."""

    endpoint_id: str  # or, on a credential board, the provider
    seconds: float
    reason: str  # rate_limited | auth_or_not_found | server_errors


class CooldownBoard:
    """Cooldowns of string keys by the rules above: the endpoints' (`Cooldowns`), and
    one per workspace of its credentials by provider (`CredentialCooldowns`)."""

    def __init__(self, base_s: float = DEFAULT_BASE_S, max_s: float = DEFAULT_MAX_S) -> None:
        self.base_s = base_s
        self.max_s = max_s
        self._state: dict[str, _KeyState] = {}
        self.listener: CooldownListener | None = None

    def success(self, endpoint_id: str) -> None:
        state = self._state.get(endpoint_id)
        if state is not None:
            state.consecutive_failures = 0
            state.triggers = 0

    def failure(
        self,
        endpoint_id: str,
        http_status: int | None,
        now: float,
        retry_after_s: float | None = None,
        *,
        base_s: float | None = None,
        max_s: float | None = None,
    ) -> Started | None:
        """Record a failed attempt (None status = network error or timeout). `base_s` and
        `max_s` override the defaults for this trigger (the workspace's `cooldown` policy).

        A failure while the endpoint is already cooling came from a request sent before the
        cooldown was known (in flight concurrently): it neither doubles the cooldown nor
        counts towards the next — otherwise a burst of concurrent 429s would take a 30 s
        cooldown to the maximum at once (found by the simulator, docs/simulation.md)."""
        state = self._state.setdefault(endpoint_id, _KeyState())
        if state.until > now and http_status not in AT_ONCE_STATUSES:
            return None
        base = self.base_s if base_s is None else base_s
        ceiling = self.max_s if max_s is None else max_s
        if http_status == 429:
            seconds, reason = self._doubling(state, base, ceiling), "rate_limited"
        elif http_status in AT_ONCE_STATUSES:
            if state.until >= now + ceiling:
                return None  # already cooling for the maximum
            seconds, reason = ceiling, "auth_or_not_found"
        elif http_status is None or http_status >= 500:
            state.consecutive_failures += 1
            if state.consecutive_failures < SERVER_ERRORS_TO_TRIGGER:
                return None
            state.consecutive_failures = 0
            seconds, reason = self._doubling(state, base, ceiling), "server_errors"
        else:
            return None  # a client error says nothing about the endpoint
        if retry_after_s is not None and retry_after_s > seconds:
            seconds = min(retry_after_s, ceiling)
        state.until = max(state.until, now + seconds)
        state.reason = reason
        if self.listener is not None:
            self.listener(endpoint_id, state.until, reason)
        return Started(endpoint_id, seconds, reason)

    def apply_remote(self, endpoint_id: str, until: float, reason: str) -> None:
        """A cooldown another replica started: the endpoint cools until `until` (or longer,
        if this node's own cooldown ends later). The listener is not told."""
        state = self._state.setdefault(endpoint_id, _KeyState())
        if until > state.until:
            state.until = until
            state.reason = reason

    def _doubling(self, state: _KeyState, base_s: float, max_s: float) -> float:
        seconds = min(base_s * float(2**state.triggers), max_s)
        state.triggers += 1
        return seconds

    def cooling(self, now: float) -> frozenset[str]:
        return frozenset(eid for eid, state in self._state.items() if state.until > now)

    def remaining_s(self, endpoint_id: str, now: float) -> float:
        state = self._state.get(endpoint_id)
        return max(0.0, state.until - now) if state else 0.0

    def cooling_of(self, endpoint_id: str, now: float) -> Cooling | None:
        """Until when and why `endpoint_id` cools at `now`; None when it does not."""
        state = self._state.get(endpoint_id)
        if state is None or state.until <= now:
            return None
        return Cooling(state.until, state.reason)


class Cooldowns(CooldownBoard):
    """The endpoints' cooldowns, and beside them the workspaces' own credentials'."""

    def __init__(self, base_s: float = DEFAULT_BASE_S, max_s: float = DEFAULT_MAX_S) -> None:
        super().__init__(base_s, max_s)
        # Same rules and lengths; kept with the endpoints' board so that whatever holds
        # one (the runtime, its Redis sharing, a simulator) holds the other.
        self.credentials = CredentialCooldowns(base_s, max_s)


@dataclass(frozen=True, slots=True)
class CredentialHealth:
    """One BYOK credential as its workspace sees it in `GET /health` (never a secret)."""

    provider: str
    cooling: Cooling | None
    last_failure: str | None  # http_401 | http_429 | http_503 | does_not_decrypt | …
    last_failure_at: float | None  # epoch seconds
    recent_failures: int  # within RECENT_FAILURES_WINDOW_S, as this node saw them


class CredentialCooldowns:
    """Cooldowns of workspaces' own provider credentials: one `CooldownBoard` per
    workspace, keyed by provider slug, so a lookup costs one dict access when nothing of
    the workspace cools. Shared between replicas as `"<workspace id>:<provider>"` keys;
    the failures kept for health stay this node's own."""

    def __init__(self, base_s: float = DEFAULT_BASE_S, max_s: float = DEFAULT_MAX_S) -> None:
        self.base_s = base_s
        self.max_s = max_s
        self._boards: dict[int, CooldownBoard] = {}
        self._failures: dict[tuple[int, str], deque[tuple[float, str]]] = {}
        self.listener: CooldownListener | None = None  # key "<workspace id>:<provider>"

    def failure(
        self,
        workspace_id: int,
        provider: str,
        reason: str,
        http_status: int | None,
        now: float,
        retry_after_s: float | None = None,
        *,
        base_s: float | None = None,
        max_s: float | None = None,
    ) -> Started | None:
        """Record a failed attempt with the workspace's own credential (`reason`: what
        health shows, e.g. `http_401`); the endpoint rules decide whether it cools."""
        kept = self._failures.setdefault((workspace_id, provider), deque(maxlen=MAX_KEPT_FAILURES))
        kept.append((now, reason))
        status = 401 if reason == DOES_NOT_DECRYPT else http_status
        board = self._board(workspace_id)
        return board.failure(provider, status, now, retry_after_s, base_s=base_s, max_s=max_s)

    def success(self, workspace_id: int, provider: str) -> None:
        board = self._boards.get(workspace_id)
        if board is not None:
            board.success(provider)

    def cooling(self, workspace_id: int, now: float) -> frozenset[str]:
        """The providers whose credential of this workspace cools at `now`."""
        board = self._boards.get(workspace_id)
        return board.cooling(now) if board is not None else frozenset()

    def health(
        self, workspace_id: int, providers: Iterable[str], now: float
    ) -> list[CredentialHealth]:
        """Each of `providers` (the workspace's credentials), sorted; may be called from
        another thread than the one recording (copies are taken before iterating)."""
        board = self._boards.get(workspace_id)
        shown = []
        for provider in sorted(providers):
            kept = list(self._failures.get((workspace_id, provider), ()))
            recent = sum(1 for at, _reason in kept if at > now - RECENT_FAILURES_WINDOW_S)
            last_at, last = kept[-1] if kept else (None, None)
            cooling = board.cooling_of(provider, now) if board is not None else None
            shown.append(CredentialHealth(provider, cooling, last, last_at, recent))
        return shown

    def apply_remote(self, key: str, until: float, reason: str) -> None:
        """A credential cooldown another replica started (`key` as the listener told it);
        raises ValueError for a key of another shape."""
        workspace, _, provider = key.partition(":")
        if not provider:
            raise ValueError(f"not a credential key: {key!r}")
        self._board(int(workspace)).apply_remote(provider, until, reason)

    def _board(self, workspace_id: int) -> CooldownBoard:
        board = self._boards.get(workspace_id)
        if board is None:
            board = self._boards[workspace_id] = CooldownBoard(self.base_s, self.max_s)
            board.listener = lambda provider, until, reason: self._tell(
                workspace_id, provider, until, reason
            )
        return board

    def _tell(self, workspace_id: int, provider: str, until: float, reason: str) -> None:
        if self.listener is not None:
            self.listener(f"{workspace_id}:{provider}", until, reason)
