"""The simulator's event loop: requests arrive (Poisson, RATE_PER_S) on a simulated clock,
each is routed by the strategy under test and its attempts run concurrently with every
other request's, so in-flight counts are real for the adaptive strategy. Nothing sleeps:
an attempt is an event at `start + sampled latency`.

A request's life mirrors the gateway's: plan at arrival (the virtual model's target
order, or the model's decision); each attempt is in flight from its start to its end
(request_state.AttemptObserver); a failure with a retryable status
(routing/engine/attempts.py, the gateway's own table) moves on to the next endpoint of
the plan; when the request ends, every attempt goes into live metrics and cooldowns
(record.py `_observe_live`) and a success pins the session. Deterministic: every random
draw comes from a `random.Random` seeded by (seed, scenario) for the workload and script,
and (seed, scenario, strategy) for routing and provider latency — so all strategies of a
scenario see the same requests.
"""

from __future__ import annotations

import heapq
import math
import random
from dataclasses import dataclass, field

from routing.engine.attempts import is_retryable_status
from routing.engine.types import EndpointInfo
from routing.sim.providers import Provider, cost_usd, respond
from routing.sim.scenarios import SCENARIOS
from routing.sim.state import AttemptResult, GatewayState
from routing.sim.strategies import VIRTUAL_MODEL, VIRTUAL_STRATEGIES, Catalog, Plan, Router

RATE_PER_S = 10.0  # arrivals per simulated second: about 7 requests in flight at once
SESSION_SHARE = 0.3  # of requests belong to a session …
SESSIONS = 50  # … drawn uniformly from this many
INPUT_TOKENS_MEDIAN = 800
OUTPUT_TOKENS_MEDIAN = 250
TOKENS_SIGMA = 0.5


@dataclass(frozen=True, slots=True)
class Arrival:
    at_s: float
    input_tokens: int
    output_tokens: int
    session: str | None


@dataclass(frozen=True, slots=True)
class RequestResult:
    arrival: Arrival
    ok: bool
    latency_ms: float  # client-visible: arrival to the end of the last attempt
    cost_usd: float
    attempts: tuple[AttemptResult, ...]
    # The session moved to another endpoint than its previous request's: why. "failover"
    # (its endpoint failed in this request), "cooldown" (its endpoint was cooling when this
    # request arrived) or "routing" (the strategy chose another); None when it did not move.
    pin_break: str | None = None


@dataclass(frozen=True, slots=True)
class RunResult:
    scenario: str
    strategy: str
    seed: int
    duration_s: float  # the script's horizon: requests / rate
    providers: tuple[Provider, ...]  # as scripted for this run, phases included
    requests: tuple[RequestResult, ...]  # in order of arrival


@dataclass(slots=True)
class _Request:
    arrival: Arrival
    plan: Plan
    previous: str | None  # the endpoint that served the session's previous request
    previous_cooling: bool
    attempts: list[AttemptResult] = field(default_factory=list)


def workload(
    requests: int, rng: random.Random, rate_per_s: float, session_share: float = SESSION_SHARE
) -> list[Arrival]:
    arrivals, at = [], 0.0
    for _ in range(requests):
        at += rng.expovariate(rate_per_s)
        session = f"s{rng.randrange(SESSIONS)}" if rng.random() < session_share else None
        tokens_in = _tokens(rng, INPUT_TOKENS_MEDIAN)
        arrivals.append(Arrival(at, tokens_in, _tokens(rng, OUTPUT_TOKENS_MEDIAN), session))
    return arrivals


def _tokens(rng: random.Random, median: int) -> int:
    return max(1, round(rng.lognormvariate(math.log(median), TOKENS_SIGMA)))


def run(
    scenario: str,
    strategy: str,
    *,
    requests: int,
    seed: int,
    rate_per_s: float = RATE_PER_S,
    session_share: float = SESSION_SHARE,
) -> RunResult:
    """Simulate `requests` requests of `scenario` routed by `strategy`."""
    duration_s = requests / rate_per_s
    providers = SCENARIOS[scenario].script(duration_s, random.Random(f"{seed}/{scenario}/script"))
    arrivals = workload(
        requests, random.Random(f"{seed}/{scenario}/workload"), rate_per_s, session_share
    )
    loop = _Loop(providers, strategy, random.Random(f"{seed}/{scenario}/{strategy}"))
    results = loop.run(arrivals)
    return RunResult(scenario, strategy, seed, duration_s, providers, tuple(results))


class _Loop:
    """One run: the gateway state, the router, and the heap of attempts in flight."""

    def __init__(self, providers: tuple[Provider, ...], strategy: str, rng: random.Random) -> None:
        self.state = GatewayState()
        self.router = Router(strategy, Catalog.of(providers), self.state, rng)
        self.provider = {p.endpoint_id: p for p in providers}
        self.rng = rng
        self.events: list[tuple[float, int, _Request, EndpointInfo, int, float, float]] = []
        self.seq = 0
        self.last_served: dict[str, str] = {}  # session -> endpoint id
        self.results: dict[int, RequestResult] = {}

    def run(self, arrivals: list[Arrival]) -> list[RequestResult]:
        pending = iter(arrivals)
        upcoming = next(pending, None)
        while upcoming is not None or self.events:
            if upcoming is not None and (not self.events or upcoming.at_s <= self.events[0][0]):
                self._arrive(upcoming)
                upcoming = next(pending, None)
                continue
            at, _seq, request, endpoint, status, latency_ms, started = heapq.heappop(self.events)
            attempt = AttemptResult(endpoint, status, latency_ms, started)
            self.state.finished(attempt, at)
            request.attempts.append(attempt)
            if attempt.ok or not is_retryable_status(status, None):
                self._finish(request, at)
            else:
                self._start(request, at)
        return [self.results[id(a)] for a in arrivals]

    def _arrive(self, arrival: Arrival) -> None:
        now = arrival.at_s
        previous = self.last_served.get(arrival.session) if arrival.session else None
        cooling = previous is not None and previous in self.state.cooldowns.cooling(now)
        request = _Request(arrival, self.router.plan(arrival.session, now), previous, cooling)
        self._start(request, now)

    def _start(self, request: _Request, now: float) -> None:
        endpoint = request.plan.next_endpoint(now)
        if endpoint is None:
            self._finish(request, now)
            return
        self.state.started(endpoint)
        status, latency_ms = respond(self.provider[endpoint.id], now, self.rng)
        self.seq += 1
        event = (now + latency_ms / 1000, self.seq, request, endpoint, status, latency_ms, now)
        heapq.heappush(self.events, event)

    def _finish(self, request: _Request, now: float) -> None:
        arrival, attempts = request.arrival, request.attempts
        self.state.record(attempts, arrival.output_tokens, now)
        served = attempts[-1] if attempts and attempts[-1].ok else None
        cost, pin_break = 0.0, None
        if served is not None:
            provider = self.provider[served.endpoint.id]
            cost = cost_usd(provider, arrival.input_tokens, arrival.output_tokens)
            if arrival.session is not None:
                virtual = VIRTUAL_MODEL if self.router.strategy in VIRTUAL_STRATEGIES else None
                self.state.pin(arrival.session, served.endpoint, now, virtual)
                pin_break = _pin_break(request, served.endpoint.id)
                self.last_served[arrival.session] = served.endpoint.id
        self.results[id(arrival)] = RequestResult(
            arrival=arrival,
            ok=served is not None,
            latency_ms=(now - arrival.at_s) * 1000,
            cost_usd=cost,
            attempts=tuple(attempts),
            pin_break=pin_break,
        )


def _pin_break(request: _Request, served: str) -> str | None:
    previous = request.previous
    if previous is None or previous == served:
        return None
    if any(a.endpoint.id == previous and not a.ok for a in request.attempts):
        return "failover"
    return "cooldown" if request.previous_cooling else "routing"
