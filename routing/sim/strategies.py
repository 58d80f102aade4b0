"""The strategies the simulator compares, composed from the real routing code the way the
gateway composes them: the model chain is the engine's own (routing/engine/chain.py);
`decide_model` and the failover loop restate gateway/request_path/decide.py `Plan.decide`
and execute.py `execute_plan` without the affinity counters and upstream I/O (keep them
in step).

The same four providers are configured in one of two shapes, as an operator would:
- `balanced`, `price`: one model with four provider endpoints. `decide` orders them by the
  mode (R-DEC-6, D-1), moves unhealthy endpoints to the end (R-EXE-2) and ones in cooldown
  after them (R-EXE-3); the session pin (R-EXE-7) is per model, so it keeps a
  session on one provider. Up to MAX_ATTEMPTS attempts.
- `round_robin`, `weighted_random`, `cost`, `adaptive`: a virtual model whose four targets
  are models served by one endpoint each (R-MOD-7). `order_targets` or `adaptive_order`
  (R-EXE-5, with the session's warm target boosted, R-EXE-6) orders the targets, and
  `arrange_targets` makes the order obey cooldowns (R-EXE-3), health (R-EXE-2) and the
  session's pin on a target (R-EXE-7); the gateway then decides each target on its own,
  lazily, when its failover loop reaches it.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field, replace

from routing.engine.adaptive import MIN_WEIGHT_FRACTION
from routing.engine.affinity.keeping import keep_session
from routing.engine.chain import Catalog as ChainCatalog
from routing.engine.chain import TargetPins, model_chain
from routing.engine.decide import decide
from routing.engine.scoring import blended_price, inverse_square_price
from routing.engine.types import EndpointInfo, LiveState, Mode, PolicyView, RoutingRequest
from routing.sim.providers import Provider, endpoint_of
from routing.sim.state import GatewayState, pin_key

MODEL = "sim/chat"  # the model of the provider-mode shape
VIRTUAL_MODEL = "sim/virtual"  # the alias of the virtual-model shape
MAX_ATTEMPTS = 3  # per model of the chain (SPEC R-EXE-1, SWITCHYARD_MAX_ATTEMPTS)
MODEL_MODES = {"balanced": Mode.BALANCED, "price": Mode.PRICE}
VIRTUAL_STRATEGIES = ("round_robin", "weighted_random", "cost", "adaptive")
STRATEGIES = (*VIRTUAL_STRATEGIES, *MODEL_MODES)
POLICY = PolicyView()


@dataclass(frozen=True, slots=True)
class VirtualModel:
    """The simulated virtual model, as the gateway's snapshot holds one."""

    slug: str
    strategy: str
    targets: tuple[tuple[str, float], ...]
    objective: str = "balanced"
    min_weight_fraction: float = MIN_WEIGHT_FRACTION


@dataclass(frozen=True, slots=True)
class Catalog:
    """The providers as the router sees them in both shapes; endpoint ids are shared, so
    live metrics and cooldowns key the same way in each."""

    providers: tuple[Provider, ...]
    model_endpoints: tuple[EndpointInfo, ...]  # every provider as an endpoint of MODEL
    target_endpoint: dict[str, EndpointInfo]  # virtual target slug -> its one endpoint

    @classmethod
    def of(cls, providers: tuple[Provider, ...]) -> Catalog:
        return cls(
            providers=providers,
            model_endpoints=tuple(endpoint_of(p, MODEL) for p in providers),
            target_endpoint={f"sim/{p.name}": endpoint_of(p, f"sim/{p.name}") for p in providers},
        )


@dataclass(slots=True)
class Plan:
    """One request's attempt list, decided model by model as the failover loop reaches
    each model of the chain (at most MAX_ATTEMPTS endpoints per model)."""

    router: Router
    session: str | None
    models: deque[str]
    pending: deque[EndpointInfo] = field(default_factory=deque)

    def next_endpoint(self, now_s: float) -> EndpointInfo | None:
        while not self.pending and self.models:
            attempts = self.router.decide_model(self.models.popleft(), self.session, now_s)
            self.pending.extend(attempts)
        return self.pending.popleft() if self.pending else None


class Router:
    """One strategy over one catalog. Reads the gateway state; writes only the round-robin
    counter (the engine records outcomes)."""

    def __init__(
        self, strategy: str, catalog: Catalog, state: GatewayState, rng: random.Random
    ) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r}; expected one of {STRATEGIES}")
        self.strategy = strategy
        self.catalog = catalog
        self.state = state
        self.rng = rng
        mode = MODEL_MODES.get(strategy, Mode.BALANCED)
        alias = MODEL if strategy in MODEL_MODES else VIRTUAL_MODEL
        base = RoutingRequest(requested_model=alias, model=MODEL, mode=mode)
        self.requests = {MODEL: base} | {
            slug: replace(base, model=slug) for slug in catalog.target_endpoint
        }
        self.price = {
            slug: blended_price(endpoint) for slug, endpoint in catalog.target_endpoint.items()
        }
        # Configured target weights: equal, except weighted_random's, which an operator sets
        # to R-DEC-7's 1/(price+1)² (order_targets draws by configured weight only).
        self.targets = tuple(
            (slug, inverse_square_price(price) if strategy == "weighted_random" else 1.0)
            for slug, price in self.price.items()
        )
        virtual = VirtualModel(VIRTUAL_MODEL, strategy, self.targets)
        self.chain_catalog = ChainCatalog(
            virtual={VIRTUAL_MODEL: virtual},
            endpoints={slug: (e,) for slug, e in catalog.target_endpoint.items()},
        )

    def plan(self, session: str | None, now_s: float) -> Plan:
        if self.strategy in MODEL_MODES:
            return Plan(self, session, deque([MODEL]))
        return Plan(self, session, deque(self._order_targets(session, now_s)))

    def _order_targets(self, session: str | None, now_s: float) -> tuple[str, ...]:
        """The gateway's own model chain (routing/engine/chain.py) over the virtual model,
        with the session's kept and warm targets from its pins."""
        key = pin_key(session, VIRTUAL_MODEL) if session is not None else None
        kept = self.state.pins.get(key, now_s) if key is not None else None
        warm = self.state.warm.get(key, now_s) if key is not None else None
        pins = TargetPins(
            kept={VIRTUAL_MODEL: kept} if kept else {},
            warm={VIRTUAL_MODEL: warm} if warm and self.strategy == "adaptive" else {},
        )
        live = replace(self.state.live.state(now_s), cooling=self.state.cooldowns.cooling(now_s))
        chain = model_chain(
            replace(self.requests[MODEL], model=VIRTUAL_MODEL),
            self.chain_catalog,
            live=live,
            adaptive=self.state.adaptive,
            round_robin={VIRTUAL_MODEL: self.state.round_robin},
            rng=self.rng,
            pins=pins,
        )
        self.state.round_robin += len(chain.turns)
        return tuple(m for m in chain.models if m is not None)

    def decide_model(self, model: str, session: str | None, now_s: float) -> list[EndpointInfo]:
        """decide_model + keep_session_pin + the attempt-list cut of the gateway."""
        if model == MODEL:
            endpoints = self.catalog.model_endpoints
        else:
            endpoints = (self.catalog.target_endpoint[model],)
        cooling = self.state.cooldowns.cooling(now_s)
        live = replace(self.state.live.state(now_s), cooling=cooling)
        decision = decide(endpoints, self.requests[model], POLICY, live, self.rng, now_s)
        if session is not None:
            pinned = self.state.pins.get(pin_key(session, model), now_s)
            decision, _outcome = keep_session(decision, pinned, LiveState(cooling=cooling))
        return list(decision.ordered[:MAX_ATTEMPTS])
