"""The one home of the decision record (SPEC R-BEY-1): the JSON the trace keeps, explain
returns and the console shows — the resolved request (decision inputs, never content) and
every model's decision with its scores, factors and rejections."""

from __future__ import annotations

from typing import Any

from routing.engine.auto.settings import AutoSettings
from routing.engine.benchmarks import relevant
from routing.engine.types import Decision, RoutingRequest


def decision_json(decision: Decision, model: str | None, seed: int) -> dict[str, Any]:
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


def auto_ranking(auto: AutoSettings, decision: Decision, request: RoutingRequest) -> dict[str, Any]:
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
    decision: Decision, request: RoutingRequest, model: str | None, seed: int, auto: AutoSettings
) -> dict[str, Any]:
    """`decision_json`, with the auto router's ranking for an auto decision."""
    entry = decision_json(decision, model, seed)
    if request.auto:
        entry["auto_ranking"] = auto_ranking(auto, decision, request)
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
        "data_class": request.data_class,
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


def trace_decision(
    request: RoutingRequest | None,
    decisions: list[dict[str, Any]],
    tier: dict[str, Any] | None,
    auto: dict[str, Any] | None,
) -> dict[str, Any]:
    """What the trace keeps of the routing, exactly as explain shows it."""
    if request is None:
        return {}
    record: dict[str, Any] = {"request": request_json(request), "decisions": decisions}
    if tier is not None:
        record["tier"] = tier
    if auto is not None:
        record["auto"] = auto
    return record
