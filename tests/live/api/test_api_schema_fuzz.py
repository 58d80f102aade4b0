"""Schema fuzzing of the /v1 surface (SPEC R-API-3): schemathesis generates valid and
invalid requests from the OpenAPI description (gateway/api/openapi.yaml) and sends them to
the live gateway with a valid key. Whatever the request: never a 5xx, never HTML, and every
4xx is the OpenAI error envelope, or Anthropic's on the Messages paths (R-API-9).

Two phases per operation: coverage (each property's boundaries and wrong types, once,
deterministic) and fuzzing (`SWITCHYARD_FUZZ_EXAMPLES` random requests, default 10). The
seed is fixed, so the suite sends the same requests every run; `SWITCHYARD_FUZZ_SEED=N`
explores other ones. Run it alone with `pytest tests/live/api/test_api_schema_fuzz.py`. A
failure names the request (as a curl command) and the traceback the gateway logged for it.
"""

from __future__ import annotations

import os

import httpx
import orjson
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from gateway.api.openapi import SCHEMA

pytestmark = pytest.mark.live

EXAMPLES = int(os.environ.get("SWITCHYARD_FUZZ_EXAMPLES", "10"))
SEED = int(os.environ.get("SWITCHYARD_FUZZ_SEED", "1"))
CONFIG = schemathesis.Config.from_dict(
    {
        "seed": SEED,
        # The key is always the valid one: missing and bad keys are tested elsewhere.
        "generation": {"mode": "all", "max-examples": EXAMPLES, "with-security-parameters": False},
        # Failure reports show bodies in full (`max_tokens` included); only the key is masked.
        "output": {
            "sanitization": {
                "keys-to-sanitize": ["authorization"],
                "sensitive-markers": ["authorization"],
            }
        },
    }
)
schema = schemathesis.openapi.from_dict(SCHEMA, config=CONFIG)

# Models of the live catalog (tests/live/installation.py), so that valid bodies reach routing
# and the fake upstreams (OpenAI-style and Anthropic-style) instead of stopping at a 404 model.
# `None` keeps the generated model name.
LIVE_MODELS = [
    "meta/llama-3.3-70b",
    "anthropic/claude-sonnet-4",
    "acme/tiny",
    "acme/mini",
    "openai/text-embedding-3-small",
    "auto",
    "normal",
    None,
]
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@schema.hook
def flatmap_body(context, body):
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        return st.just(body)
    return st.sampled_from(LIVE_MODELS).map(
        lambda model: body if model is None else {**body, "model": model}
    )


def _log_since(live, offset: int) -> str:
    return live.log_path.read_text()[offset:]


# The fields of each error envelope: Anthropic's on the Messages paths (R-API-9).
OPENAI_ERROR_FIELDS = {"message", "type", "code", "param"}
ANTHROPIC_ERROR_FIELDS = {"type", "message"}


def _has_envelope(path: str, status: int, answer: object) -> bool:
    if not isinstance(answer, dict) or not isinstance(answer.get("error"), dict):
        return False
    fields = set(answer["error"])
    if path.startswith("/v1/messages"):
        return answer.get("type") == "error" and fields >= ANTHROPIC_ERROR_FIELDS
    return fields >= OPENAI_ERROR_FIELDS


def _problem(path: str, status: int, content_type: str, body: bytes) -> str | None:
    if status >= 500:
        return f"HTTP {status}"
    if "html" in content_type:
        return f"HTML answer ({status})"
    if status >= 400:
        try:
            answer = orjson.loads(body)
        except orjson.JSONDecodeError:
            return f"HTTP {status} without the error envelope"
        if not _has_envelope(path, status, answer):
            return f"HTTP {status} without a complete error envelope"
    return None


@schema.parametrize()
@settings(
    deadline=None,
    # the live gateway is a session fixture; fresh_live only resets the fakes once per
    # operation, which is what is wanted here
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_no_request_breaks_the_gateway(case, fresh_live):
    # given
    offset = len(fresh_live.log_path.read_text())
    headers = {"Authorization": f"Bearer {fresh_live.keys['acme']}"}
    # when
    response = case.call(
        base_url=fresh_live.base_url.removesuffix("/v1"), headers=headers, timeout=30
    )
    # then
    problem = _problem(
        case.operation.path,
        response.status_code,
        response.headers.get("Content-Type", ""),
        response.content,
    )
    assert problem is None, (
        f"{problem} for {case.as_curl_command(headers=headers)}\n"
        f"answer: {response.text[:500]}\n"
        f"gateway log:\n{_log_since(fresh_live, offset)[-4000:]}"
    )
    case.validate_response(response, checks=CHECKS, headers=headers)


def test_the_description_is_served_without_a_key(fresh_live):
    # when
    response = httpx.get(f"{fresh_live.base_url}/openapi.json")
    # then
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == orjson.loads(orjson.dumps(SCHEMA))
