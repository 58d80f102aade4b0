"""Hostile Messages bodies (SPEC R-API-9, R-API-3): whatever JSON a client sends to
`/v1/messages`, parsing ends in a parsed chat body or a clear 400 — never another
exception, which the gateway would answer with a 500. In process, no server."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.api.anthropic.messages import parse_messages
from gateway.api.anthropic.request import FIELDS
from gateway.errors import ApiError
from tests.properties import fuzz_examples

EXAMPLES = fuzz_examples(300)

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
    | st.sampled_from(["user", "assistant", "text", "image", "tool_use", "tool_result",
                       "thinking", "enabled", "auto", "any", "tool", "none", "base64", "url",
                       "ephemeral", "json_schema", "custom", ""])
)  # fmt: skip
# Keys the translation looks inside, so nested shapes are reached, not only refused at once.
BLOCK_KEYS = ["type", "text", "source", "media_type", "data", "url", "id", "name", "input",
              "tool_use_id", "content", "is_error", "cache_control", "input_schema",
              "description", "budget_tokens", "user_id", "effort", "format", "schema",
              "role", "disable_parallel_tool_use"]  # fmt: skip
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(BLOCK_KEYS) | st.text(max_size=3), children, max_size=5)
    ),
    max_leaves=14,
)
blocks = st.lists(st.dictionaries(st.sampled_from(BLOCK_KEYS), json_values, max_size=5),
                  max_size=3)  # fmt: skip
turns = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "x"]),
                           "content": st.one_of(st.text(max_size=8), blocks, json_values)}),
    max_size=3,
)  # fmt: skip
bodies = st.fixed_dictionaries(
    {"model": st.one_of(st.just("meta/llama-3.3-70b"), json_values),
     "max_tokens": st.one_of(st.integers(min_value=-2, max_value=70_000), json_values),
     "messages": st.one_of(turns, json_values)},
    optional={name: json_values for name in FIELDS if name not in ("model", "max_tokens",
                                                                   "messages")},
)  # fmt: skip


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=bodies)
def test_r_api_9_any_messages_body_is_parsed_or_refused_with_a_400(body: dict[str, Any]):
    refused: ApiError | None = None
    try:
        parsed = parse_messages(body)
    except ApiError as error:
        refused = error
    if refused is not None:
        assert refused.status == 400
        assert refused.message
    else:
        assert isinstance(parsed.body["messages"], list)
