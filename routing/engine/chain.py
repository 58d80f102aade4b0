"""The model chain of one request (SPEC R-MOD-6, R-MOD-7): the primary model, then the
fallback chain, with every virtual model replaced by its targets in the order its strategy,
health, cooldowns and the session's pin give them; `(None,)` for the auto router.

Pure: the live state, the adaptive load state, the round-robin turns and the session's
virtual-target pins are passed in. The turns a chain uses are returned with it, for the
caller to take (a dry run such as explain takes none, so the next real request gets the
turn explain showed, SPEC D-21).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from routing.engine.adaptive import AdaptiveState, adaptive_order
from routing.engine.scoring import blended_price
from routing.engine.types import EndpointInfo, LiveState, RoutingRequest
from routing.engine.virtual import MAX_VIRTUAL_DEPTH, arrange_targets, order_targets


class VirtualModel(Protocol):
    """A virtual model as the snapshot holds it (gateway/state/snapshot.py VirtualEntry)."""

    @property
    def slug(self) -> str: ...
    @property
    def strategy(self) -> str: ...
    @property
    def targets(self) -> tuple[tuple[str, float], ...]: ...
    @property
    def objective(self) -> str: ...
    @property
    def min_weight_fraction(self) -> float: ...


@dataclass(frozen=True, slots=True)
class TargetPins:
    """What a session brings to virtual models: per virtual slug, the target the session is
    kept on (R-EXE-7) and the one whose prompt cache is warm (R-EXE-6)."""

    kept: Mapping[str, str] = field(default_factory=dict)
    warm: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Catalog:
    """The parts of the configuration snapshot a chain is expanded over."""

    virtual: Mapping[str, VirtualModel]
    endpoints: Mapping[str, Sequence[EndpointInfo]]  # by concrete model slug


@dataclass(frozen=True, slots=True)
class ModelChain:
    models: tuple[str | None, ...]  # concrete model slugs in order; (None,) for auto
    pin_outcomes: tuple[str, ...] = ()  # "honored" / "released" per virtual-target pin met
    turns: tuple[str, ...] = ()  # round-robin virtual models whose turn this chain used


def model_chain(
    request: RoutingRequest,
    catalog: Catalog,
    *,
    live: LiveState,
    adaptive: AdaptiveState,
    round_robin: Mapping[str, int],
    rng: random.Random,
    pins: TargetPins | None = None,
) -> ModelChain:
    """The models to try in order, each concrete model once."""
    if request.auto:
        return ModelChain(models=(None,))
    walk = _Walk(catalog, live, adaptive, round_robin, rng, pins or TargetPins())
    chain: list[str | None] = []
    for slug in (request.model, *request.fallbacks):
        if slug is None:
            continue
        for concrete in walk.expand(slug):
            if concrete not in chain:
                chain.append(concrete)
    return ModelChain(tuple(chain), tuple(walk.outcomes), tuple(walk.turns))


def _cheapest_price(endpoints: Sequence[EndpointInfo]) -> float:
    prices = [blended_price(e) for e in endpoints]
    return min(prices) if prices else float("inf")


class _Walk:
    """One chain's walk through its virtual models (they may nest, MAX_VIRTUAL_DEPTH deep)."""

    def __init__(
        self,
        catalog: Catalog,
        live: LiveState,
        adaptive: AdaptiveState,
        round_robin: Mapping[str, int],
        rng: random.Random,
        pins: TargetPins,
    ) -> None:
        self.catalog, self.live, self.adaptive = catalog, live, adaptive
        self.round_robin, self.rng, self.pins = round_robin, rng, pins
        self.outcomes: list[str] = []
        self.turns: list[str] = []

    def expand(self, slug: str, depth: int = 0) -> Iterator[str]:
        entry = self.catalog.virtual.get(slug)
        if entry is None:
            yield slug
            return
        if depth >= MAX_VIRTUAL_DEPTH:
            return
        cooling, unhealthy = self._target_health(entry.targets)
        cheapest = {t: _cheapest_price(self._endpoints(t)) for t, _weight in entry.targets}
        if entry.strategy == "adaptive":
            ordered = self._adaptive_order(entry, cheapest, cooling)
        else:
            ordered = order_targets(
                entry.strategy,
                entry.targets,
                cheapest_price=cheapest,
                rng=self.rng,
                counter=self._take_turn(slug),
            )
        ordered, outcome = arrange_targets(
            ordered, cooling=cooling, unhealthy=unhealthy, pinned=self.pins.kept.get(slug)
        )
        if outcome is not None:
            self.outcomes.append(outcome)
        for target in ordered:
            yield from self.expand(target, depth + 1)

    def _endpoints(self, slug: str) -> Sequence[EndpointInfo]:
        return self.catalog.endpoints.get(slug, ())

    def _take_turn(self, slug: str) -> int:
        """The turn after those taken before this request and earlier in this chain."""
        turn = self.round_robin.get(slug, 0) + self.turns.count(slug)
        self.turns.append(slug)
        return turn

    def _target_health(
        self, targets: tuple[tuple[str, float], ...]
    ) -> tuple[frozenset[str], frozenset[str]]:
        """Targets (concrete models) whose every endpoint is cooling, or unhealthy."""
        cooling, unhealthy = set(), set()
        for slug, _weight in targets:
            ids = [e.id for e in self._endpoints(slug)]
            if ids and all(i in self.live.cooling for i in ids):
                cooling.add(slug)
            if ids and all(i in self.live.unhealthy for i in ids):
                unhealthy.add(slug)
        return frozenset(cooling), frozenset(unhealthy)

    def _adaptive_order(
        self, entry: VirtualModel, cheapest: dict[str, float], cooling: frozenset[str]
    ) -> tuple[str, ...]:
        """R-EXE-5 for a virtual model: P2C on peak-EWMA load among its targets (models),
        weights shaped by its objective; the session's warm target gets the warm-cache
        boost (R-EXE-6)."""
        error_rate: dict[str, float] = {}
        for target, _weight in entry.targets:
            stats = [
                self.live.stats[e.id] for e in self._endpoints(target) if e.id in self.live.stats
            ]
            rates = [s.error_rate or 0.0 for s in stats]
            error_rate[target] = sum(rates) / len(rates) if rates else 0.0
        return adaptive_order(
            entry.targets,
            state=self.adaptive,
            price=cheapest,
            error_rate=error_rate,
            cooling=cooling,
            rng=self.rng,
            objective=entry.objective,
            min_weight_fraction=entry.min_weight_fraction,
            warm=self.pins.warm.get(entry.slug),
        )
