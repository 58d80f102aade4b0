"""The /v1 OpenAPI description (gateway/api/openapi.yaml), in process: a valid OpenAPI 3.1
document whose every schema is valid JSON Schema, and whose Anthropic Messages paths (SPEC
R-API-9) follow the code that serves them — the fields the translation reads and refuses,
the choices it accepts, Anthropic's error envelope at the chat path's statuses, the answers'
shapes, the `X-Switchyard-*` headers, and the two headers a key may come in. Every list is
read from the code, so a change there that the description misses fails here. The live
counterpart is tests/live/api/test_api_schema_fuzz.py.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import uuid
from typing import Any

import orjson
import pytest
from django.http import HttpResponse
from django.test import RequestFactory
from django.urls import resolve
from drf_spectacular.validation import validate_schema
from jsonschema import Draft202012Validator

from gateway.api import views
from gateway.api.anthropic import blocks as messages_blocks
from gateway.api.anthropic import request as messages_request
from gateway.api.anthropic import tools as messages_tools
from gateway.api.anthropic.count_tokens import (
    ENDPOINT_HEADERS,
    ESTIMATED,
    TOKEN_COUNT_HEADER,
    UPSTREAM,
)
from gateway.api.anthropic.messages import (
    FACT_HEADERS,
    anthropic_model_list,
    render_anthropic_error,
)
from gateway.api.anthropic.request import FIELDS, MessagesRequestError, to_chat_body
from gateway.api.anthropic.response import STOP_REASONS, stop_reason_for, to_message
from gateway.api.openapi import SCHEMA
from gateway.errors import ANTHROPIC_ERROR_TYPES as ERROR_TYPES
from gateway.errors import ERROR_TYPES as CHAT_ERROR_TYPES
from gateway.errors import ApiError
from gateway.request_path.authenticate import presented_key
from gateway.request_path.record import add_headers

JSON = "application/json"
MESSAGES = "/v1/messages"
COUNT_TOKENS = "/v1/messages/count_tokens"
MINIMAL_BODY = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "Hi"}]}


def _operation(path: str, method: str = "post") -> dict[str, Any]:
    return SCHEMA["paths"][path][method]


def _body_schema(path: str) -> dict[str, Any]:
    return _operation(path)["requestBody"]["content"][JSON]["schema"]


def _answer_schema(path: str, status: str, method: str = "post") -> dict[str, Any]:
    return _operation(path, method)["responses"][status]["content"][JSON]["schema"]


def _component(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _conforms(instance: Any, schema: dict[str, Any]) -> bool:
    """Whether `instance` is valid against `schema`, its `$ref`s resolved in the document."""
    return Draft202012Validator({**schema, "components": SCHEMA["components"]}).is_valid(instance)


def _refusal(body: dict[str, Any]) -> str | None:
    """The field the Messages translation refuses `body` for, or None if it serves it."""
    try:
        to_chat_body(body)
    except MessagesRequestError as error:
        return error.param
    return None


def _choices(schema: dict[str, Any], field: str) -> set[Any]:
    """The values `field` may take across the variants of an object schema."""
    values: set[Any] = set()
    for variant in schema.get("anyOf", [schema]):
        allowed = variant["properties"][field]
        values.update(allowed["enum"] if "enum" in allowed else [allowed["const"]])
    return values


def _body_fields_read(*modules: Any) -> set[str]:
    """The field names these modules read off the request `body` as literals,
    `body.get("x")` or `body["x"]` (the loops over FIELDS read the table's names)."""
    found = set()
    for node in ast.walk(ast.parse("".join(inspect.getsource(module) for module in modules))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target, key = node.func.value, node.args[0] if node.args else None
            is_read = node.func.attr == "get"
        elif isinstance(node, ast.Subscript):
            target, key, is_read = node.value, node.slice, True
        else:
            continue
        is_body = isinstance(target, ast.Name) and target.id == "body"
        if is_read and is_body and isinstance(key, ast.Constant) and isinstance(key.value, str):
            found.add(key.value)
    return found


def _schemas_in(tree: Any) -> list[dict[str, Any]]:
    if isinstance(tree, list):
        return [schema for item in tree for schema in _schemas_in(item)]
    if not isinstance(tree, dict):
        return []
    found = [tree["schema"]] if isinstance(tree.get("schema"), dict) else []
    return found + [schema for value in tree.values() for schema in _schemas_in(value)]


def test_the_description_is_valid_openapi_3_1():
    # when / then (raises on an invalid document)
    validate_schema(SCHEMA)


def test_every_schema_in_the_description_is_valid_json_schema():
    # given
    schemas = [*SCHEMA["components"]["schemas"].values(), *_schemas_in(SCHEMA["paths"])]
    # when / then (raises on an invalid schema)
    for schema in schemas:
        Draft202012Validator.check_schema(schema)
    assert _body_schema(MESSAGES) in schemas


@pytest.mark.parametrize(
    ("path", "view"), [(MESSAGES, views.messages), (COUNT_TOKENS, views.count_tokens)]
)
def test_the_messages_paths_are_described_where_they_are_routed(path, view):
    # when
    routed = resolve(path).func
    # then
    assert routed is view
    assert set(SCHEMA["paths"][path]) == {"post"}


@pytest.mark.parametrize("path", [MESSAGES, COUNT_TOKENS])
def test_every_field_the_translation_reads_is_in_the_request_schema(path):
    # given
    served = {field for field, handling in FIELDS.items() if handling in ("translate", "pass")}
    read = _body_fields_read(messages_request, messages_tools)
    # when
    documented = set(_body_schema(path)["properties"])
    # then
    assert read - served == set()  # FIELDS names every field read
    assert served - documented == set()


def test_only_count_tokens_goes_without_max_tokens():
    # then
    assert _body_schema(MESSAGES)["required"] == ["model", "max_tokens", "messages"]
    assert _body_schema(COUNT_TOKENS)["required"] == ["model", "messages"]


@pytest.mark.parametrize("field", sorted(f for f, how in FIELDS.items() if how == "refuse"))
def test_a_refused_field_is_documented_as_accepted_only_where_the_gateway_accepts_it(field):
    # given
    documented = _body_schema(MESSAGES)["properties"][field]
    served = [None, *(choice["const"] for choice in documented["anyOf"] if "const" in choice)]
    asking = {"asks": "for something"}
    # when
    refused_for = _refusal({**MINIMAL_BODY, field: asking})
    # then
    assert refused_for == field
    assert not _conforms(asking, documented)
    assert [_refusal({**MINIMAL_BODY, field: value}) for value in served] == [None] * len(served)
    assert all(_conforms(value, documented) for value in served)


def test_the_custom_tool_schema_holds_the_fields_the_translation_reads():
    # given
    tool = _body_schema(MESSAGES)["properties"]["tools"]["items"]
    read = {f for f, how in messages_tools.TOOL_FIELDS.items() if how != "drop"}
    refused = [f for f, how in messages_tools.TOOL_FIELDS.items() if how == "refuse"]
    base = {"name": "lookup", "input_schema": {"type": "object"}}
    # when
    refusals = [_refusal({**MINIMAL_BODY, "tools": [{**base, f: ["other"]}]}) for f in refused]
    # then
    assert read - set(tool["properties"]) == set()
    assert refusals == [f"tools[0].{f}" for f in refused]
    assert all(not _conforms(["other"], tool["properties"][f]) for f in refused)


def test_the_routing_fields_are_the_chat_apis():
    # given
    passed = [field for field, handling in FIELDS.items() if handling == "pass"]
    chat = _body_schema("/v1/chat/completions")["properties"]
    # when
    messages = _body_schema(MESSAGES)["properties"]
    # then
    assert {f: messages[f] for f in passed} == {f: chat[f] for f in passed}


# The translation keeps these choices in private tables; reading them here is the point.
@pytest.mark.parametrize(
    ("_case", "documented", "accepted"),
    [
        ("roles", lambda p: _choices(p["messages"]["items"], "role"), set(messages_blocks.ROLES)),
        ("thinking types", lambda p: _choices(p["thinking"], "type"),
         set(messages_request._THINKING_TYPES)),
        ("efforts", lambda p: _choices(p["output_config"], "effort"),
         set(messages_request._EFFORTS)),
        ("tool choices", lambda p: _choices(p["tool_choice"], "type"),
         {*messages_tools._CHOICES, "tool"}),
    ],
)  # fmt: skip
def test_the_documented_choices_are_the_ones_the_translation_accepts(_case, documented, accepted):
    # when
    choices = documented(_body_schema(MESSAGES)["properties"])
    # then
    assert choices == accepted


def test_a_body_using_every_feature_is_documented_and_served():
    # given (Claude Code's shape: blocks, a tool loop, thinking sent back)
    body = {
        "model": "anthropic/claude-sonnet-4",
        "max_tokens": 4096,
        "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "What is in it?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                             "data": "iVBORw0KGgo="}},
            ]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Look it up.", "signature": "sig"},
                {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "x"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a cat",
                 "is_error": False},
            ]},
        ],
        "tools": [{"name": "lookup", "description": "Looks up.",
                   "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}}],
        "tool_choice": {"type": "auto", "disable_parallel_tool_use": True},
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "output_config": {"effort": "high"},
        "metadata": {"user_id": "user-1"},
        "stop_sequences": ["END"],
        "temperature": 1,
        "top_k": 40,
        "stream": True,
        "models": ["meta/llama-3.3-70b"],
        "mcp_servers": [],
    }  # fmt: skip
    # when
    refused_for = _refusal(body)
    # then
    assert refused_for is None
    assert _conforms(body, _body_schema(MESSAGES))
    assert _conforms(body, _body_schema(COUNT_TOKENS))


def test_a_count_without_max_tokens_is_documented_for_count_tokens_alone():
    # given
    body = {key: value for key, value in MINIMAL_BODY.items() if key != "max_tokens"}
    # then
    assert _conforms(body, _body_schema(COUNT_TOKENS))
    assert not _conforms(body, _body_schema(MESSAGES))


@pytest.mark.parametrize("path", [MESSAGES, COUNT_TOKENS])
def test_the_messages_errors_are_anthropics_envelope_at_the_chat_paths_statuses(path):
    # given: every 4xx of the chat path but Django's own 405, which comes before any view
    statuses = {str(status) for status in CHAT_ERROR_TYPES if 400 <= status < 500} - {"405"}
    # when
    errors = {status: _answer_schema(path, status) for status in _operation(path)["responses"]
              if status != "200"}  # fmt: skip
    # then
    assert errors == dict.fromkeys([*statuses, "5XX"], _component("AnthropicError"))


@pytest.mark.parametrize("status", [*sorted(ERROR_TYPES), 418, 599])
def test_every_error_the_messages_paths_render_is_the_documented_envelope(status):
    # given
    error = ApiError(status, "refused", code="some_code", param="model")
    # when
    body = orjson.loads(render_anthropic_error(error).content)
    # then
    assert _conforms(body, _component("AnthropicError"))
    assert not _conforms(error.body(), _component("AnthropicError"))


@pytest.mark.parametrize("path", [MESSAGES, COUNT_TOKENS])
def test_each_messages_error_is_described_by_its_anthropic_error_type(path):
    # given
    responses = _operation(path)["responses"]
    # when
    described = {status: answer["description"] for status, answer in responses.items()}
    # then
    assert {status: described[status] for status in described if status[0] == "4"} == {
        str(status): f"`{kind}`; nothing was charged"
        for status, kind in ERROR_TYPES.items()
        if status < 500
    }
    assert all(
        f"`{kind}`" in described["5XX"] for status, kind in ERROR_TYPES.items() if status >= 500
    )


def test_a_message_answer_is_the_documented_message():
    # given: a text and a tool call whose id Anthropic would refuse as it came
    completion = {
        "model": "meta/llama-3.3-70b",
        "choices": [{"finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "Looking.",
            "tool_calls": [{"id": "functions.Bash:0", "type": "function",
                            "function": {"name": "Bash", "arguments": '{"cmd": "ls"}'}}],
        }}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5},
    }  # fmt: skip
    # when
    message = to_message(completion, message_id="msg_1", requested_model="auto")
    # then
    assert _conforms(message, _answer_schema(MESSAGES, "200"))
    assert _answer_schema(MESSAGES, "200") == _component("AnthropicMessage")


def test_every_stop_reason_the_gateway_gives_is_documented():
    # given
    documented = set(SCHEMA["components"]["schemas"]["AnthropicMessage"]["properties"][
        "stop_reason"]["enum"])  # fmt: skip
    finish_reasons = [*STOP_REASONS, "unknown", None]
    # when
    given = {
        stop_reason_for(finish, has_tool_use=tools, refused=refused, stop_sequence=sequence)
        for finish, tools, refused, sequence in itertools.product(
            finish_reasons, [False, True], [False, True], [None, "END"]
        )
    }
    # then
    assert given == documented


def test_a_message_streams_as_server_sent_events():
    # when
    content = _operation(MESSAGES)["responses"]["200"]["content"]
    # then
    assert set(content) == {JSON, "text/event-stream"}


def test_the_token_count_answer_is_documented():
    # when
    answer = _answer_schema(COUNT_TOKENS, "200")
    # then
    assert answer == _component("AnthropicTokenCount")
    assert _conforms({"input_tokens": 42}, answer)
    assert not _conforms({"tokens": 42}, answer)


def test_the_switchyard_headers_of_a_message_are_documented():
    # given: the routing facts, and what the request path adds to every answer
    response = add_headers(HttpResponse(), uuid.uuid4(), None)
    on_every_answer = {name for name in response.headers if name.startswith("X-Switchyard-")}
    # when
    documented = set(_operation(MESSAGES)["responses"]["200"]["headers"])
    # then
    assert documented == {*FACT_HEADERS.values(), *on_every_answer}
    assert on_every_answer == {"X-Switchyard-Trace-Id", "X-Switchyard-Attempts"}


def test_each_routing_fact_header_is_described_by_its_fact():
    # given
    headers = _operation(MESSAGES)["responses"]["200"]["headers"]
    # when
    described = {header: headers[header]["description"] for header in FACT_HEADERS.values()}
    # then
    assert {header: text.split(";")[0] for header, text in described.items()} == {
        header: f"`switchyard.{fact}`" for fact, header in FACT_HEADERS.items()
    }


def test_the_count_headers_name_who_counted_and_the_endpoint_counted_for():
    # when
    headers = _operation(COUNT_TOKENS)["responses"]["200"]["headers"]
    # then
    assert list(headers) == [TOKEN_COUNT_HEADER, *ENDPOINT_HEADERS.values()]
    assert headers[TOKEN_COUNT_HEADER]["schema"] == {"enum": [UPSTREAM, ESTIMATED]}
    assert f"`{UPSTREAM}`: " in headers[TOKEN_COUNT_HEADER]["description"]
    assert f"`{ESTIMATED}`: " in headers[TOKEN_COUNT_HEADER]["description"]
    assert [headers[header]["description"].split()[:2] for header in ENDPOINT_HEADERS.values()] == [
        ["the", fact] for fact in ENDPOINT_HEADERS
    ]


def test_the_key_is_read_from_either_documented_scheme():
    # given
    schemes = SCHEMA["components"]["securitySchemes"]
    factory = RequestFactory()
    key = "sk-sy-lookup-secret"
    # when
    by_bearer = presented_key(factory.post(MESSAGES, headers={"Authorization": f"Bearer {key}"}))
    by_api_key = presented_key(factory.post(MESSAGES, headers={schemes["apiKeyAuth"]["name"]: key}))
    # then
    assert by_bearer == by_api_key == key
    assert schemes["bearerAuth"]["scheme"] == "bearer"
    assert schemes["apiKeyAuth"]["in"] == "header"
    assert SCHEMA["security"] == [{"bearerAuth": []}, {"apiKeyAuth": []}]


@pytest.mark.parametrize(
    ("path", "method"), [(MESSAGES, "post"), (COUNT_TOKENS, "post"), ("/v1/models", "get")]
)
def test_the_anthropic_version_header_is_documented_and_optional(path, method):
    # when
    parameters = _operation(path, method)["parameters"]
    # then
    assert [(p["name"], p["in"], p["required"]) for p in parameters] == [
        ("anthropic-version", "header", False)
    ]


@pytest.mark.parametrize("count", [0, 2])
def test_the_model_list_is_documented_in_either_shape(count):
    # given
    listed = [
        {"id": f"acme/model-{index}", "object": "model", "created": 1_700_000_000 + index,
         "owned_by": "switchyard"}
        for index in range(count)
    ]  # fmt: skip
    answer = _answer_schema("/v1/models", "200", method="get")
    # when (a request carrying `anthropic-version`)
    anthropic_shaped = anthropic_model_list(listed)
    # then
    assert answer == {"oneOf": [_component("ModelList"), _component("AnthropicModelList")]}
    assert _conforms({"object": "list", "data": listed}, answer)
    assert _conforms(anthropic_shaped, answer)
    assert not _conforms(anthropic_shaped, _component("ModelList"))
