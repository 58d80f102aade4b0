"""`POST /v1/messages/count_tokens` (SPEC R-API-9): the input tokens of a Messages request.

The count is routed as that Messages request would be (`serve.decide_only`: the key's
preset and scope, its routes, tiers, the workspace's policy and residency), and refused as
it would be, in Anthropic's envelope; nothing is recorded or changed, and no budget is
admitted. When the endpoint the request would try first is Anthropic-style, that upstream
counts (gateway/upstream/count_tokens.py), with the credential the request would carry;
otherwise the answer is the estimate the context-window filter routes by
(routing/engine/workload.py). `X-Switchyard-Token-Count` says which (`upstream` or
`estimated`), and `X-Switchyard-Model`, `-Provider` and `-Endpoint` name the endpoint.

What the upstream's failure to count means:
- A final 400, 413 or 422 refuses the body, which the Messages request would send it too:
  the client gets that status in Anthropic's envelope with the upstream's message, scrubbed
  (SPEC D-17) — what a native Anthropic client expects of count_tokens, and what the
  Messages path does with it (D-18).
- Anything else is the gateway's problem, not the client's, and is answered with the
  estimate: 401 / 403 (the gateway's credential), 404 (an Anthropic-compatible upstream
  without the count endpoint; a model it lacks would be a catalog error), 408, 429, 5xx, a
  timeout, a redirect, an answer without a valid count, no credential at all.

A request too long for every endpoint is counted too (the estimate: no endpoint would
take it), since counting is how a client finds out; any other refusal is the Messages
request's own error (409 `no_endpoint_for_policy`, …).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest, HttpResponse

from gateway.api.anthropic.messages import MESSAGES
from gateway.api.wire import json_response
from gateway.errors import ApiError
from gateway.request_path.caller import Caller
from gateway.request_path.decide import no_endpoint
from gateway.request_path.execute import deadline_s, make_targets
from gateway.request_path.operation import Served
from gateway.request_path.serve import decide_only, native_for
from gateway.state.request_state import upstream_client
from gateway.upstream.count_tokens import count_body, count_tokens
from routing.engine.attempts import PASSED_THROUGH, AttemptFailed
from routing.engine.types import Decision, EndpointInfo

log = logging.getLogger(__name__)

TOKEN_COUNT_HEADER = "X-Switchyard-Token-Count"
UPSTREAM, ESTIMATED = "upstream", "estimated"
# The endpoint that counted, or whose request the estimate is for.
ENDPOINT_HEADERS = {
    "model": "X-Switchyard-Model",
    "provider": "X-Switchyard-Provider",
    "endpoint": "X-Switchyard-Endpoint",
}
# Upstream statuses that refuse the body itself (D-18's passed-through statuses but 404,
# which on this path says the upstream has no count endpoint, not that the body is wrong).
REFUSED_BODY = PASSED_THROUGH - {404}


@dataclass(frozen=True, slots=True)
class TokenCount:
    input_tokens: int
    source: str  # UPSTREAM | ESTIMATED
    endpoint: EndpointInfo | None  # the one a Messages request would try first, if any


async def count_message_tokens(
    request: HttpRequest, caller: Caller, body: dict[str, Any]
) -> TokenCount:
    """The count for this Messages body (the module docstring's rules). Raises ApiError for
    what the Messages request itself would be refused, and for a body the upstream refuses.
    The body has no `max_tokens` (Anthropic's count endpoint takes none): 1 stands in for
    it, or one more than the thinking budget, which must stay below `max_tokens`."""
    stood_in = {**body, "max_tokens": body.get("max_tokens") or _stand_in(body)}
    served = await decide_only(request, MESSAGES, caller, stood_in)
    estimate = served.resolved.routing.input_tokens
    endpoint = _first_endpoint(served)
    if endpoint is None:
        return TokenCount(estimate, ESTIMATED, None)
    if caller.snapshot.providers[endpoint.provider].api_style != "anthropic":
        return TokenCount(estimate, ESTIMATED, endpoint)
    state = served.plan.state
    target = make_targets(caller, (endpoint,), state.settings, state)[0]
    native = native_for(caller, body, request.headers)  # what the Messages request sends
    sent = count_body(native.body, endpoint.upstream_model)
    try:
        async with asyncio.timeout(deadline_s(caller, state.settings) - caller.elapsed_s()):
            counted = await count_tokens(
                upstream_client(), target, sent, beta=native.headers.get("anthropic-beta")
            )
    except AttemptFailed as failure:
        if failure.http_status in REFUSED_BODY and not failure.retryable:
            said = f": {failure.upstream_message}" if failure.upstream_message else "."
            raise ApiError(
                failure.http_status,
                f"The upstream rejected the request (HTTP {failure.http_status}){said}",
                code="upstream_rejected_request",
            ) from None
        log.info("count_tokens on %s answered with the estimate: %s", endpoint.id, failure)
        return TokenCount(estimate, ESTIMATED, endpoint)
    except TimeoutError:
        log.info("count_tokens on %s answered with the estimate: the deadline passed", endpoint.id)
        return TokenCount(estimate, ESTIMATED, endpoint)
    return TokenCount(counted, UPSTREAM, endpoint)


def render_count(count: TokenCount) -> HttpResponse:
    response = json_response({"input_tokens": count.input_tokens})
    response[TOKEN_COUNT_HEADER] = count.source
    if count.endpoint is not None:
        facts = {
            "model": count.endpoint.model,
            "provider": count.endpoint.provider,
            "endpoint": count.endpoint.id,
        }
        for fact, header in ENDPOINT_HEADERS.items():
            response[header] = facts[fact]
    return response


def _first_endpoint(served: Served) -> EndpointInfo | None:
    """The first endpoint of the first model of the chain that has one: what the Messages
    request would try first. None when every model is refused for size alone; else, when
    none has one, the request's own error (execute_plan's) is raised. The decisions'
    effects (affinity counters) are a request's, never a count's: not applied."""
    plan, caller = served.plan, served.caller
    error = ApiError(404, "No model to route to.", code="model_not_found")
    refused: list[Decision] = []
    for model in plan.models:
        decision, _effects = plan.decide(model)
        if decision.ordered:
            return decision.ordered[0]
        refused.append(decision)
        error = no_endpoint(refused, served.resolved.routing, caller.snapshot)
    if error.code == "context_length_exceeded":
        return None
    raise error


def _stand_in(body: dict[str, Any]) -> int:
    thinking = body.get("thinking")
    budget = thinking.get("budget_tokens") if isinstance(thinking, dict) else None
    if isinstance(budget, int) and not isinstance(budget, bool) and budget >= 1:
        return budget + 1
    return 1
