"""From a parsed body to routing decisions: resolve the request (routing/resolve.py),
expand virtual models into a model chain, and decide each model in turn
(routing/decide.py). Pure steps fed from the snapshot and live metrics; no upstream I/O,
so `POST /v1/routing/explain` runs exactly this and stops. The one state this module moves,
a round-robin virtual model's turn, it only peeks at in a dry run (D-21)."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from django.http import HttpRequest

from gateway import runtime
from gateway.api.context import CallContext
from gateway.api.errors import ApiError, invalid
from gateway.snapshot import Snapshot, VirtualEntry
from routing.adaptive import adaptive_order
from routing.autorouter import first_model_only, narrow_for_auto
from routing.benchmarks import relevant
from routing.decide import decide
from routing.resolve import ResolveError, UnknownModel, resolve
from routing.scoring import blended_price
from routing.types import Decision, LiveState, RoutingRequest
from routing.virtual import MAX_VIRTUAL_DEPTH, arrange_targets, order_targets

SEED_HEADER = "X-Switchyard-Route-Seed"  # replays a weighted-random draw (explain ↔ trace)
MAX_SEED = 2**63 - 1


def resolve_request(
    ctx: CallContext, request: HttpRequest, body: dict[str, Any], operation: str
) -> RoutingRequest:
    try:
        routing_request = resolve(
            body,
            request.headers,
            ctx.snapshot.catalog,
            operation=operation,
            workspace_mode=ctx.workspace.policy.routing_mode,
        )
    except ResolveError as error:
        raise invalid(error.message, param=error.param) from None
    except UnknownModel as error:
        raise ApiError(
            404,
            f"The model `{error.model}` does not exist.",
            code="model_not_found",
            param=error.param,
        ) from None
    ctx.requested_model = routing_request.requested_model
    return routing_request


def route_seed(ctx: CallContext, request: HttpRequest) -> int:
    sent = request.headers.get(SEED_HEADER, "")
    if sent:
        if not sent.isdigit() or int(sent) > MAX_SEED:
            raise invalid(
                f"{SEED_HEADER} must be an integer from 0 to {MAX_SEED}", param=SEED_HEADER
            )
        return int(sent)
    return ctx.trace_id.int & MAX_SEED


def _cheapest_price(snap: Snapshot, slug: str) -> float:
    prices = [blended_price(e) for e in snap.endpoints.get(slug, ())]
    return min(prices) if prices else float("inf")


@dataclass(frozen=True, slots=True)
class TargetPins:
    """What a session brings to virtual models (gateway/api/affinity.py): per virtual slug,
    the target the session is kept on (R-EXE-7) and the one whose cache is warm (R-EXE-6)."""

    kept: Mapping[str, str] = field(default_factory=dict)
    warm: Mapping[str, str] = field(default_factory=dict)


class _Expansion:
    """One request's walk through its virtual models, with the live state read once — and
    only when a virtual model is met (a concrete model needs none of it here). A `dry_run`
    (explain) sees the round-robin turns the next real request will take, and takes none."""

    def __init__(
        self, snap: Snapshot, rng: random.Random, pins: TargetPins, *, dry_run: bool
    ) -> None:
        self.snap, self.rng, self.pins, self.dry_run = snap, rng, pins, dry_run
        self.outcomes: list[str] = []  # session-pin outcomes, for the affinity counter

    @cached_property
    def live(self) -> LiveState:
        return runtime.live().state(time.time())

    @cached_property
    def cooling_endpoints(self) -> frozenset[str]:
        return runtime.cooldowns().cooling(time.time())

    def expand(self, slug: str, depth: int = 0) -> Iterator[str]:
        entry = self.snap.virtual.get(slug)
        if entry is None:
            yield slug
            return
        if depth >= MAX_VIRTUAL_DEPTH:
            return
        cooling, unhealthy = self._target_health(entry.targets)
        cheapest = {t: _cheapest_price(self.snap, t) for t, _weight in entry.targets}
        if entry.strategy == "adaptive":
            ordered = self._adaptive_order(entry, cheapest, cooling)
        else:
            ordered = order_targets(
                entry.strategy,
                entry.targets,
                cheapest_price=cheapest,
                rng=self.rng,
                counter=self._round_robin_turn(slug),
            )
        ordered, outcome = arrange_targets(
            ordered, cooling=cooling, unhealthy=unhealthy, pinned=self.pins.kept.get(slug)
        )
        if outcome is not None:
            self.outcomes.append(outcome)
        for target in ordered:
            yield from self.expand(target, depth + 1)

    def _round_robin_turn(self, slug: str) -> int:
        if self.dry_run:
            return runtime.peek_round_robin(slug)
        return runtime.next_round_robin(slug)

    def _target_health(
        self, targets: tuple[tuple[str, float], ...]
    ) -> tuple[frozenset[str], frozenset[str]]:
        """Targets (concrete models) whose every endpoint is cooling, or unhealthy."""
        cooling, unhealthy = set(), set()
        for slug, _weight in targets:
            ids = [e.id for e in self.snap.endpoints.get(slug, ())]
            if ids and all(i in self.cooling_endpoints for i in ids):
                cooling.add(slug)
            if ids and all(i in self.live.unhealthy for i in ids):
                unhealthy.add(slug)
        return frozenset(cooling), frozenset(unhealthy)

    def _adaptive_order(
        self, entry: VirtualEntry, cheapest: dict[str, float], cooling: frozenset[str]
    ) -> tuple[str, ...]:
        """R-EXE-5 for a virtual model: P2C on peak-EWMA load among its targets (models),
        weights shaped by its objective; the session's warm target gets the warm-cache
        boost (R-EXE-6)."""
        error_rate: dict[str, float] = {}
        for target, _weight in entry.targets:
            stats = [self.live.stats[e.id] for e in self.snap.endpoints.get(target, ())
                     if e.id in self.live.stats]  # fmt: skip
            rates = [s.error_rate or 0.0 for s in stats]
            error_rate[target] = sum(rates) / len(rates) if rates else 0.0
        return adaptive_order(
            entry.targets,
            state=runtime.adaptive(),
            price=cheapest,
            error_rate=error_rate,
            cooling=cooling,
            rng=self.rng,
            objective=entry.objective,
            min_weight_fraction=entry.min_weight_fraction,
            warm=self.pins.warm.get(entry.slug),
        )


def model_chain(
    snap: Snapshot,
    request: RoutingRequest,
    rng: random.Random,
    pins: TargetPins | None = None,
    *,
    dry_run: bool = False,
) -> tuple[list[str | None], list[str]]:
    """The models to try in order: the primary, then the fallback chain, with virtual
    models replaced by their ordered targets; `[None]` for the auto router. Also the
    outcomes of the session's virtual-target pins ("honored" / "released"). `dry_run`
    (explain): the same chain the next real request gets, with no round-robin turn taken."""
    if request.auto:
        return [None], []
    expansion = _Expansion(snap, rng, pins or TargetPins(), dry_run=dry_run)
    chain: list[str | None] = []
    for slug in (request.model, *request.fallbacks):
        if slug is None:
            continue
        for concrete in expansion.expand(slug):
            if concrete not in chain:
                chain.append(concrete)
    return chain, expansion.outcomes


def decide_model(
    ctx: CallContext, request: RoutingRequest, model: str | None, rng: random.Random
) -> Decision:
    snap = ctx.snapshot
    step = replace(request, model=model)
    candidates = snap.all_endpoints if request.auto else snap.endpoints.get(model or "", ())
    now = time.time()
    live = replace(runtime.live().state(now), cooling=runtime.cooldowns().cooling(now))
    if not request.auto:
        return decide(candidates, step, ctx.workspace.policy, live, rng, now)
    auto = ctx.workspace.auto
    policy = narrow_for_auto(ctx.workspace.policy, auto, snap.endpoints.keys())
    decision = decide(candidates, step, policy, live, rng, now, objective=auto.objective)
    if auto.fallback:
        return decision
    ordered = first_model_only(decision.ordered)
    kept = {e.id for e in ordered}
    return replace(
        decision,
        ordered=ordered,
        scored=tuple(s for s in decision.scored if s.endpoint_id in kept),
        notes=(*decision.notes, "Auto-router fallback is off: only the top model is tried."),
    )


def decision_json(decision: Decision, model: str | None, seed: int) -> dict[str, Any]:
    """The one decision record (SPEC R-BEY-1): trace, explain and console all show this."""
    return {
        "model": model,
        "algorithm": decision.algorithm,
        "seed": seed,
        "mode": str(decision.mode),
        "mode_source": decision.mode_source,
        "reason": decision.reason,
        "notes": list(decision.notes),
        "ordered": [e.id for e in decision.ordered],
        "rejected": [{"endpoint": eid, "reason": str(reason)} for eid, reason in decision.rejected],
        "scored": [
            {
                "endpoint": s.endpoint_id,
                "score": s.score,
                "demoted": s.demoted,
                "multipliers": [{"name": n, "value": v} for n, v in s.multipliers],
                "factors": [
                    {
                        "name": f.name,
                        "value": f.value,
                        "normalized": f.normalized,
                        "weight": f.weight,
                        "contribution": f.contribution,
                    }
                    for f in s.factors
                ],
            }
            for s in decision.scored
        ],
    }


def auto_ranking(ctx: CallContext, decision: Decision, request: RoutingRequest) -> dict[str, Any]:
    """The auto router's model ranking (R-AUTO-3): the models in attempt order, each with
    its best endpoint's score and the benchmark ids its fit was read from."""
    scores = {s.endpoint_id: s.score for s in decision.scored}
    models: dict[str, dict[str, Any]] = {}
    for endpoint in decision.ordered:
        if endpoint.model not in models:
            models[endpoint.model] = {
                "model": endpoint.model,
                "endpoint": endpoint.id,
                "score": scores.get(endpoint.id),
                "benchmarks": [b for b, _s in relevant(endpoint.benchmarks, request.task)],
            }
    auto = ctx.workspace.auto
    return {
        "objective": auto.objective,
        "spend_caps": {"input": auto.max_input, "output": auto.max_output},
        "patterns": list(auto.patterns),
        "fallback": auto.fallback,
        "selected": next(iter(models), None),
        "fallback_order": list(models)[1:] if auto.fallback else [],
        "models": list(models.values()),
    }


def decision_entry(
    ctx: CallContext, decision: Decision, request: RoutingRequest, model: str | None, seed: int
) -> dict[str, Any]:
    """`decision_json`, with the auto router's ranking for an auto decision."""
    entry = decision_json(decision, model, seed)
    if request.auto:
        entry["auto_ranking"] = auto_ranking(ctx, decision, request)
    return entry


def request_json(request: RoutingRequest) -> dict[str, Any]:
    """The resolved request as stored in the trace: decision inputs, never content."""
    prefs = request.provider
    return {
        "requested_model": request.requested_model,
        "model": request.model,
        "auto": request.auto,
        "fallbacks": list(request.fallbacks),
        "pinned_provider": request.pinned_provider,
        "mode": str(request.mode),
        "mode_source": request.mode_source,
        "residency": request.residency,
        "task": request.task,
        "task_source": request.task_source,
        "language": request.language,
        "language_source": request.language_source,
        "has_image": request.has_image,
        "has_tools": request.has_tools,
        "input_tokens": request.input_tokens,
        "output_tokens": request.output_tokens,
        "complexity": request.complexity,
        "provider": {
            "order": list(prefs.order),
            "allow_fallbacks": prefs.allow_fallbacks,
            "only": sorted(prefs.only),
            "ignore": sorted(prefs.ignore),
            "sort": str(prefs.sort) if prefs.sort else None,
            "max_price": {
                "prompt": prefs.max_price_prompt,
                "completion": prefs.max_price_completion,
            },
            "preferred_min_throughput": prefs.preferred_min_throughput,
            "regions": sorted(prefs.regions),
        },
    }
