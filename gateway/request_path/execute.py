"""Step 6 of the request path: carry out the plan. Each model of the chain in turn
(SPEC R-MOD-6) is decided, its attempt list turned into callable targets (the credential
chosen and decrypted here, on the upstream call path only) and handed to the one executor
(gateway/upstream/execute.py); the next model only after this one's endpoints are
exhausted with retryable failures or none passed the filter. A final failure (a client
error) ends the request with the error of SPEC D-18.

Which credential an attempt carries (SPEC R-BYOK-1, R-BEY-5; docs/byok.md): the
workspace's own key for the endpoint's provider when it applies to the calling key and
the endpoint's model, else the managed key, as for any workspace. An own key that applies
is never silently replaced: with `managed_fallback` false its failure (a refusal, a key
that does not decrypt) is that endpoint's answer; with true, the managed key is tried
next on the same endpoint — one extra attempt, beyond `max_attempts`, which counts
endpoints — and, while the own key cools, instead of it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from gateway.errors import ApiError
from gateway.gateway_settings import GatewaySettings
from gateway.request_path.caller import Caller
from gateway.request_path.decide import Plan, no_endpoint
from gateway.request_path.record import RequestRecord
from gateway.request_path.resolve.affinity import remember_success
from gateway.state.request_state import (
    AttemptObserver,
    Effects,
    RoutingState,
    own_credential,
    upstream_client,
)
from gateway.state.snapshot import CredentialEntry
from gateway.upstream.execute import Outcome, execute
from gateway.upstream.providers.anthropic_native import NativeRequest
from gateway.upstream.target import Target
from routing.engine.attempts import final_error
from routing.engine.types import Decision, EndpointInfo
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
    native: NativeRequest | None = None,
) -> Outcome:
    """The first success of the chain, or the error of its last failure. Decisions and
    attempts go into `record` as they happen; `apply` makes each step's effects real.
    `native`: a Messages request, sent as it is to Anthropic-style upstreams."""
    state = plan.state
    gateway, policy = state.settings, caller.policy
    # One total deadline for the whole request, every model of the chain and a committed
    # stream's relay included (SPEC R-EXE-8, D-20).
    deadline_at = asyncio.get_running_loop().time() + deadline_s(caller, gateway)
    deadline_at -= caller.elapsed_s()
    routing = plan.resolved.routing
    last_error: ApiError | None = None
    refused: list[Decision] = []  # the models that kept no endpoint, for D-16's window
    for model in plan.models:
        decision, effects = plan.decide(model)
        apply(effects)
        record.decision = decision
        record.decisions.append(plan.entry(decision, model))
        if not decision.ordered:
            refused.append(decision)
            last_error = no_endpoint(refused, routing, caller.snapshot)
            continue
        attempt_list = decision.ordered[: max(1, min(policy.max_attempts, gateway.max_attempts))]
        targets = make_targets(caller, attempt_list, gateway, state)
        observer = AttemptObserver(
            caller.workspace.cooldown,
            caller,
            workspace=caller.workspace,
            uses_own=[target.own_credential for target in targets],
        )
        outcome = await execute(
            upstream_client(),
            targets,
            body,
            operation=routing.operation,
            stream=stream,
            ids=caller.completion_ids,
            deadline_at=deadline_at,
            observer=observer,
            native=native,
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
        return ApiError(
            503,
            "No upstream attempt was made.",
            code="upstream_unavailable",
            headers={"Retry-After": "1"},
            extra=attempts,
        )
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


@dataclass(frozen=True, slots=True)
class Credential:
    secret: str  # "" when it does not decrypt (or none exists): the attempt is `no_credential`
    own: bool  # the workspace's own key (BYOK), else the managed one


def credentials_to_try(
    caller: Caller, endpoint: EndpointInfo, state: RoutingState
) -> list[Credential]:
    """The credentials to call `endpoint` with, in order (the module docstring's rules)."""
    own = own_credential(caller.workspace, caller.key.pk, endpoint)
    if own is None:  # not a BYOK request: restricted away from this key or model, or none
        return [Credential(_managed_secret(caller, endpoint), own=False)]
    managed = _managed_secret(caller, endpoint) if own.managed_fallback else ""
    if not managed:  # no fallback allowed, or none to fall back to
        return [Credential(_own_secret(caller, endpoint, own), own=True)]
    if endpoint.provider in state.credentials.cooling(caller.workspace.id, state.now):
        return [Credential(managed, own=False)]  # the own key is known to fail right now
    return [
        Credential(_own_secret(caller, endpoint, own), own=True),
        Credential(managed, own=False),
    ]


def _own_secret(caller: Caller, endpoint: EndpointInfo, own: CredentialEntry) -> str:
    aad = owner_aad(caller.workspace.slug, endpoint.provider)
    try:
        return unseal(own.sealed, aad, settings.SWITCHYARD_ENCRYPTION_KEYS)
    except DecryptionError as exc:
        log.error(
            "workspace %s: its own %s credential does not decrypt: %s",
            caller.workspace.slug,
            endpoint.provider,
            exc,
        )
        return ""


def _managed_secret(caller: Caller, endpoint: EndpointInfo) -> str:
    provider = caller.snapshot.providers[endpoint.provider]
    if provider.managed is None:
        return ""
    aad = owner_aad(None, endpoint.provider)
    try:
        return unseal(provider.managed, aad, settings.SWITCHYARD_ENCRYPTION_KEYS)
    except DecryptionError as exc:
        log.error("managed credential for provider %s does not decrypt: %s", endpoint.provider, exc)
        return ""


def _timeout_s(name: str, *sources: dict[str, int], default_s: float) -> float:
    for source in sources:
        if name in source:
            return source[name] / 1000
    return default_s


def make_targets(
    caller: Caller,
    endpoints: tuple[EndpointInfo, ...],
    gateway: GatewaySettings,
    state: RoutingState,
) -> list[Target]:
    """Each endpoint's targets, one per credential to try, each saying whether it carries
    the workspace's own key. Upstream text of any of them is scrubbed of every credential
    of its endpoint and of the caller's key (D-17)."""
    planned = []
    policy = caller.workspace.timeouts
    for endpoint in endpoints:
        timeouts = caller.snapshot.endpoint_timeouts.get(endpoint.id, {})
        credentials = credentials_to_try(caller, endpoint, state)
        redact = tuple(s for s in (caller.key_secret, *(c.secret for c in credentials)) if s)
        for credential in credentials:
            target = Target(
                endpoint=endpoint,
                base_url=caller.snapshot.base_urls[endpoint.id],
                api_style=caller.snapshot.providers[endpoint.provider].api_style,
                api_key=credential.secret,
                connect_timeout_s=_timeout_s(
                    "connect_ms", timeouts, policy, default_s=gateway.connect_timeout_s
                ),
                ttfb_timeout_s=_timeout_s(
                    "ttft_ms", timeouts, policy, default_s=gateway.ttfb_timeout_s
                ),
                idle_timeout_s=_timeout_s(
                    "idle_ms", timeouts, policy, default_s=gateway.idle_timeout_s
                ),
                redact=redact,
                own_credential=credential.own,
            )
            planned.append(target)
    return planned


def deadline_s(caller: Caller, gateway: GatewaySettings) -> float:
    return _timeout_s("total_ms", caller.workspace.timeouts, default_s=gateway.total_timeout_s)
