"""Smart tier routing on the request path (SPEC §5): when the requested model is one of
the workspace's tiered aliases, classify the request (routing/tiers.py), apply the
session's upward-only pin, and rewrite the model to the tier's target before resolving.
The verdict goes to response headers, the trace and Prometheus."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest

from gateway import metrics, runtime
from gateway.api.context import CallContext
from gateway.api.errors import invalid
from routing.sessions import detect_session
from routing.tier_pins import pin_key
from routing.tiers import Verdict, choose_tier, verdict_headers


@dataclass(frozen=True, slots=True)
class TierOutcome:
    alias: str
    target: str
    verdict: Verdict

    def headers(self) -> dict[str, str]:
        return {**verdict_headers(self.verdict), "X-Switchyard-Tier-Target": self.target}

    def as_json(self) -> dict[str, Any]:
        verdict = self.verdict
        return {
            "alias": self.alias,
            "target": self.target,
            "tier": verdict.tier,
            "score": verdict.score,
            "source": verdict.source,
            "signals": [
                {"name": s.name, "points": s.points, "detail": s.detail} for s in verdict.signals
            ],
        }


def apply_tiers(
    ctx: CallContext, request: HttpRequest, body: dict[str, Any], *, dry_run: bool = False
) -> tuple[dict[str, Any], TierOutcome | None]:
    """Return the body to route (model rewritten when a tiered alias was asked for).
    With `dry_run` (explain) the session's pin is read but nothing is written or counted."""
    config = ctx.workspace.tiers
    requested = body.get("model")
    if config is None or not isinstance(requested, str) or requested not in config.aliases:
        return body, None
    session_key, _source = detect_session(
        request.headers, body, workspace_id=ctx.workspace.id, api_key_id=ctx.key.pk, model=requested
    )
    pins = _ReadOnlyPins() if dry_run else runtime.tier_pins()
    now = time.time()
    was_hard = pins.get(pin_key(requested, session_key), now) == "hard"
    try:
        verdict, target = choose_tier(
            config.aliases[requested], body, request.headers, config, pins, session_key, now
        )
    except ValueError as error:
        header = str(error).split(" ", 1)[0]
        raise invalid(str(error), param=header) from None
    if not dry_run:
        _count(requested, verdict, escalated=verdict.tier == "hard" and not was_hard
               and pins.get(pin_key(requested, session_key), now) == "hard")  # fmt: skip
    return {**body, "model": target}, TierOutcome(requested, target, verdict)


def _count(alias: str, verdict: Verdict, *, escalated: bool) -> None:
    metrics.TIER_REQUESTS.labels(alias, verdict.tier, verdict.source).inc()
    if verdict.source in ("classifier", "pinned"):
        metrics.TIER_SCORE.labels(alias).observe(verdict.score)
    if escalated:
        metrics.TIER_ESCALATIONS.labels(alias).inc()


class _ReadOnlyPins:
    """The live pins, read but never written: explain must not change a session's pin."""

    def get(self, key: str, now: float) -> str | None:
        return runtime.tier_pins().get(key, now)

    def pin_hard(self, key: str, now: float, ttl_s: float) -> None:
        return None

    def touch(self, key: str, now: float, ttl_s: float) -> None:
        return None
