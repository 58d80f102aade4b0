"""`POST {base_url}/messages/count_tokens` on an Anthropic-style upstream: the one upstream
call that is not a model request, made for `POST /v1/messages/count_tokens` (SPEC R-API-9,
gateway/api/anthropic/count_tokens.py) to the endpoint a Messages request would try first.

It is sent the way the executor (execute.py) sends an attempt: with the target's
credential, the head awaited within connect + first-byte time and the body within the idle
timeout, redirects never followed, at most MAX_COUNT_BODY_BYTES read, and the upstream's
error text scrubbed of every credential before anyone sees it (SPEC D-17). A count is not
an attempt: it moves no health, cooldown or latency figure, and it is never retried.
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson

from gateway.upstream.exchange import MAX_ERROR_BODY_BYTES, failure_of, read_body, send_head
from gateway.upstream.providers import anthropic
from gateway.upstream.target import Target
from routing.engine.attempts import AttemptFailed

# The fields of a Messages body that Anthropic's count endpoint takes besides `model`
# (its MessageCountTokensParams, beta fields included): the generation settings
# (`max_tokens`, `stream`, `temperature`, `stop_sequences`, `metadata`, …) and Switchyard's
# own routing fields are refused there as extra inputs, so they are never sent.
COUNT_FIELDS = (
    "messages",
    "system",
    "tools",
    "tool_choice",
    "thinking",
    "output_config",
    "cache_control",
    "context_management",
    "mcp_servers",
    "speed",
)
# An answer is `{"input_tokens": N}`; an error body is cut where the executor cuts one.
MAX_COUNT_BODY_BYTES = MAX_ERROR_BODY_BYTES


def count_body(body: dict[str, Any], upstream_model: str) -> dict[str, Any]:
    """The client's Messages body as the count endpoint takes it: the endpoint's own model
    id, and only the fields of COUNT_FIELDS that are set."""
    fields = {name: body[name] for name in COUNT_FIELDS if body.get(name) is not None}
    return {"model": upstream_model, **fields}


async def count_tokens(
    client: httpx.AsyncClient,
    target: Target,
    body: dict[str, Any],
    *,
    beta: str | None = None,
) -> int:
    """The upstream's `input_tokens` for `body` (already in the count endpoint's shape,
    `count_body`). `beta`: the client's `anthropic-beta` header, passed on. Raises
    AttemptFailed — with the status, whether the upstream calls it final, and its message
    scrubbed — when no count comes back."""
    if not target.api_key:
        raise AttemptFailed("no_credential", "no credential for this provider")
    headers = {
        "x-api-key": target.api_key,
        "anthropic-version": anthropic.API_VERSION,
        "content-type": "application/json",
        "accept-encoding": "identity",
    }
    if beta:
        headers["anthropic-beta"] = beta
    request = httpx.Request(
        "POST",
        f"{target.base_url}/messages/count_tokens",
        headers=headers,
        content=orjson.dumps(body),
    )
    response = await send_head(client, request, target)
    data = await read_body(response, target, MAX_COUNT_BODY_BYTES)
    if response.status_code != 200:
        raise failure_of(response, data, target)
    return _input_tokens(data)


def _input_tokens(data: bytes) -> int:
    try:
        answer = orjson.loads(data)
    except orjson.JSONDecodeError:
        answer = None
    counted = answer.get("input_tokens") if isinstance(answer, dict) else None
    if not isinstance(counted, int) or isinstance(counted, bool) or counted < 0:
        raise AttemptFailed("malformed", "upstream sent no valid input_tokens")
    return counted
