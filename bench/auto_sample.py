"""What the auto router (`"model": "auto"`) would choose for each request of the mixed sample,
over the demo catalog: the real local classifier (routing/engine/auto/classify.py) and the real
`decide` with the demo workspace's auto-router settings, no live metrics (every latency and
error rate unknown, as on a fresh gateway), no LLM classifier. For bench/smart_sample.py.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from routing.engine import language, workload
from routing.engine.auto.classify import classify_locally
from routing.engine.auto.settings import auto_settings, narrow_for_auto
from routing.engine.benchmarks import catalog_scores
from routing.engine.decide import decide
from routing.engine.types import EndpointInfo, LiveState, PolicyView, RoutingRequest

TOKENS_PER_PRICE_UNIT = 1_000_000


@dataclass(frozen=True, slots=True)
class AutoChoice:
    model: str  # the top-ranked model ("" when nothing survived the filter)
    endpoint: str
    cost_usd: Decimal


def catalog_endpoints(config: Any) -> tuple[EndpointInfo, ...]:
    """Every routable endpoint of the parsed configuration, as the snapshot builds it."""
    models = {m.slug: m for m in config.models}
    endpoints = []
    for e in config.endpoints:
        model = models[e.model]
        endpoints.append(
            EndpointInfo(
                id=e.id,
                provider=e.provider,
                model=e.model,
                upstream_model=e.upstream_model,
                region=e.region,
                status=e.status,
                sovereignty_class=e.sovereignty_class,
                partner=e.partner,
                price_input=float(e.price_input),
                price_output=float(e.price_output),
                capabilities=frozenset(model.capabilities),
                context_window=model.context_window,
                parameters_b=model.parameters_b,
                strong_languages=frozenset(model.strong_languages),
                task_tags=frozenset(model.task_tags),
                documentation_completeness=model.documentation_completeness,
                benchmarks=catalog_scores(model.benchmarks),
            )
        )
    return tuple(endpoints)


def choose(
    bodies: Sequence[tuple[dict, int]], config: Any, workspace_slug: str, seed: int
) -> list[AutoChoice]:
    """For each (body, output tokens): the auto router's first choice and its cost."""
    workspace = next(w for w in config.workspaces if w.slug == workspace_slug)
    settings = auto_settings(workspace.auto_router or {})
    endpoints = catalog_endpoints(config)
    prices = {e.id: (Decimal(str(e.price_input)), Decimal(str(e.price_output))) for e in endpoints}
    policy = narrow_for_auto(PolicyView(), settings, {e.model for e in endpoints})
    rng = random.Random(seed)
    choices = []
    for body, output_tokens in bodies:
        verdict = classify_locally(body)
        input_tokens = workload.estimate_chat_tokens(body)
        request = RoutingRequest(
            requested_model="auto",
            model=None,
            auto=True,
            task=verdict.task,
            complexity=verdict.complexity,
            language=language.detect(workload.last_user_text(body)),
            has_image=workload.has_image(body),
            has_tools=workload.has_tools(body),
            input_tokens=input_tokens,
            output_tokens=workload.requested_output_tokens(body),
        )
        decision = decide(
            endpoints, request, policy, LiveState(), rng, 0.0, objective=settings.objective
        )
        if not decision.ordered:
            choices.append(AutoChoice("", "", Decimal(0)))
            continue
        top = decision.ordered[0]
        price_in, price_out = prices[top.id]
        cost = (input_tokens * price_in + output_tokens * price_out) / TOKENS_PER_PRICE_UNIT
        choices.append(AutoChoice(top.model, top.id, cost))
    return choices
