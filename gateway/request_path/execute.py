"""Step 6 of the request path: carry out the plan. Each model of the chain in turn
(SPEC R-MOD-6) is decided, its attempt list turned into callable targets (the credential
chosen and decrypted here, on the upstream call path only) and handed to the one executor
(gateway/upstream/execute.py); the next model only after this one's endpoints are
exhausted with retryable failures or none passed the filter. A final failure (a client
error) ends the request with the error of SPEC D-18."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings

from gateway.errors import ApiError
from gateway.gateway_settings import GatewaySettings
from gateway.request_path.affinity import remember_success
from gateway.request_path.caller import Caller
from gateway.request_path.decide import Plan, no_endpoint
from gateway.request_path.record import RequestRecord
from gateway.state.request_state import AttemptObserver, Effects, upstream_client
from gateway.upstream.execute import Outcome, Target, execute
from routing.engine.attempts import final_error
from routing.engine.types import EndpointInfo
from workspaces.secrets import DecryptionError, owner_aad, unseal

log = logging.getLogger(__name__)


async def execute_plan(
    caller: Caller,
    record: RequestRecord,
    plan: Plan,
    body: dict[str, Any],
    *,
    stream: bool,
    apply: Callable[[Effects], None],
) -> Outcome:
    """The first success of the chain, or the error of its last failure. Decisions and
    attempts go into `record` as they happen; `apply` makes each step's effects real."""
    state = plan.state
    gateway, policy = state.settings, caller.policy
    # One total deadline for the whole request, every model of the chain and a committed
    # stream's relay included (SPEC R-EXE-8, D-20).
    deadline_at = asyncio.get_running_loop().time() + deadline_s(caller, gateway)
    deadline_at -= caller.elapsed_s()
    routing = plan.resolved.routing
    last_error: ApiError | None = None
    for model in plan.models:
        decision, effects = plan.decide(model)
        apply(effects)
        record.decision = decision
        record.decisions.append(plan.entry(decision, model))
        if not decision.ordered:
            last_error = no_endpoint(decision, routing, caller.snapshot)
            continue
        attempt_list = decision.ordered[: max(1, min(policy.max_attempts, gateway.max_attempts))]
        outcome = await execute(
            upstream_client(),
            make_targets(caller, attempt_list, gateway),
            body,
            operation=routing.operation,
            stream=stream,
            ids=caller.completion_ids,
            deadline_at=deadline_at,
            observer=AttemptObserver(caller.workspace.cooldown, caller),
        )
        record.attempts.extend(outcome.attempts)
        if outcome.failure is None and outcome.target is not None:
            session, virtual = plan.resolved.session, caller.snapshot.virtual
            apply(remember_success(session, routing, virtual, model, outcome.target, caller.now()))
            return outcome
        last_error = upstream_failure(outcome)
        if outcome.failure is not None and not outcome.failure.retryable:
            break
    raise last_error or ApiError(404, "No model to route to.", code="model_not_found")


def upstream_failure(outcome: Outcome) -> ApiError:
    """The client's error after the model's last attempt failed (SPEC D-18). Only the
    upstream's own message, scrubbed of credentials (D-17), is quoted for a request the
    upstream rejected; the attempts list carries the gateway's words only."""
    failures = outcome.failures or ([outcome.failure] if outcome.failure else [])
    attempts = {"attempts": [a.as_dict() for a in outcome.attempts]}
    if not failures:
        return ApiError(503, "No upstream attempt was made.", code="upstream_unavailable",
                        headers={"Retry-After": "1"}, extra=attempts)  # fmt: skip
    final = final_error(failures)
    last = failures[-1]
    if final.code == "upstream_rejected_request":
        said = f": {last.upstream_message}" if last.upstream_message else "."
        message = f"The upstream rejected the request (HTTP {final.status}){said}"
    elif final.code == "unsupported_request":
        message = last.message  # no endpoint's API can express it (e.g. `n` > 1)
    else:
        message = f"All {len(outcome.attempts)} upstream attempts failed; last: {last.message}"
    headers = {"Retry-After": str(final.retry_after_s)} if final.retry_after_s else {}
    return ApiError(final.status, message, code=final.code, headers=headers, extra=attempts)


def _credential(caller: Caller, endpoint: EndpointInfo) -> str:
    """The workspace's BYOK key for this provider when it applies, else the managed key."""
    ring = settings.SWITCHYARD_ENCRYPTION_KEYS
    own = caller.workspace.credentials.get(endpoint.provider)
    try:
        if (
            own is not None
            and (not own.models or endpoint.model in own.models)
            and (not own.api_key_ids or caller.key.pk in own.api_key_ids)
        ):
            return unseal(own.sealed, owner_aad(caller.workspace.slug, endpoint.provider), ring)
        provider = caller.snapshot.providers[endpoint.provider]
        if provider.managed is not None:
            return unseal(provider.managed, owner_aad(None, endpoint.provider), ring)
    except DecryptionError as exc:
        log.error("credential for provider %s does not decrypt: %s", endpoint.provider, exc)
    return ""


def _timeout_s(name: str, *sources: dict[str, int], default_s: float) -> float:
    for source in sources:
        if name in source:
            return source[name] / 1000
    return default_s


def make_targets(
    caller: Caller, endpoints: tuple[EndpointInfo, ...], gateway: GatewaySettings
) -> list[Target]:
    targets = []
    policy = caller.workspace.timeouts
    for endpoint in endpoints:
        own = caller.snapshot.endpoint_timeouts.get(endpoint.id, {})
        targets.append(
            Target(
                endpoint=endpoint,
                base_url=caller.snapshot.base_urls[endpoint.id],
                api_style=caller.snapshot.providers[endpoint.provider].api_style,
                api_key=_credential(caller, endpoint),
                connect_timeout_s=_timeout_s(
                    "connect_ms", own, policy, default_s=gateway.connect_timeout_s
                ),
                ttfb_timeout_s=_timeout_s("ttft_ms", own, policy, default_s=gateway.ttfb_timeout_s),
                idle_timeout_s=_timeout_s("idle_ms", own, policy, default_s=gateway.idle_timeout_s),
                redact=(caller.key_secret,) if caller.key_secret else (),
            )
        )
    return targets


def deadline_s(caller: Caller, gateway: GatewaySettings) -> float:
    return _timeout_s("total_ms", caller.workspace.timeouts, default_s=gateway.total_timeout_s)
