"""The OpenAPI 3.1 description of the /v1 surface, served at `GET /v1/openapi.json`.

Data beside the views it describes, and small: the standard OpenAI parameters with the
types and ranges the gateway checks (SPEC D-19), Switchyard's routing fields (their enums
come from `routing`, so they cannot drift), the response fields clients rely on, and the
error envelope (R-API-3); and the Anthropic Messages ingress (R-API-9) with Anthropic's
bodies, error envelope and the `X-Switchyard-*` headers that carry the routing facts.
Bodies allow extra fields, as the gateway does: unknown fields pass through to the
upstream (the Messages paths drop them). `tests/live/api/test_api_schema_fuzz.py` fuzzes
the live gateway against this description; `tests/gateway/api/test_openapi_document.py` checks
it against the code.
"""

from __future__ import annotations

from typing import Any

import orjson
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from gateway.api.anthropic.blocks import DROPPED_BLOCKS
from gateway.api.anthropic.count_tokens import (
    ENDPOINT_HEADERS,
    ESTIMATED,
    TOKEN_COUNT_HEADER,
    UPSTREAM,
)
from gateway.api.anthropic.messages import FACT_HEADERS
from gateway.api.anthropic.response import STOP_REASONS
from gateway.errors import ANTHROPIC_ERROR_TYPES
from gateway.request_path.params import MAX_STOP_SEQUENCES
from gateway.request_path.parse import CHAT_ROLES
from gateway.upstream.providers.anthropic import MIN_THINKING_BUDGET
from routing.engine.language import ISO_639_1
from routing.engine.resolve import SORT_MODES
from routing.engine.types import MAX_FALLBACK_MODELS, RESIDENCY_ORDER, TASKS, Mode

JSON = "application/json"
Schema = dict[str, Any]


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def obj(required: tuple[str, ...] = (), /, **properties: Any) -> Schema:
    """An object with these properties; extra properties are allowed unless a caller
    closes it (`closed(...)`)."""
    return {"type": "object", "required": list(required), "properties": properties}


def closed(schema: Schema) -> Schema:
    return {**schema, "additionalProperties": False}


def array(items: Schema, **constraints: Any) -> Schema:
    return {"type": "array", "items": items, **constraints}


def enum(*values: str) -> Schema:
    return {"enum": list(values)}


def const(value: str) -> Schema:
    return {"type": "string", "const": value}


def nullable(schema: Schema) -> Schema:
    return {"anyOf": [schema, NULL]}


def number(low: float, high: float) -> Schema:
    return {"type": ["number", "null"], "minimum": low, "maximum": high}


def count(**constraints: Any) -> Schema:
    return {"type": ["integer", "null"], "minimum": 1, **constraints}


STRING: Schema = {"type": "string"}
INTEGER: Schema = {"type": "integer"}
BOOLEAN: Schema = {"type": "boolean"}
OBJECT: Schema = {"type": "object"}
NULL: Schema = {"type": "null"}
NAME: Schema = {"type": "string", "pattern": "^[a-zA-Z0-9_-]{1,64}$"}
IMAGE_URL: Schema = {"type": "string", "pattern": "^(https?://|data:image/[a-z.+-]+;base64,)"}
SLUGS = array({"type": "string", "pattern": r"\S"})  # trimmed; blank is a 400
MODEL: Schema = {"type": "string", "minLength": 1, "examples": ["auto", "meta/llama-3.3-70b"]}
METADATA: Schema = {
    "type": "object",
    "maxProperties": 16,
    "additionalProperties": {"type": "string", "maxLength": 512},
}
FUNCTION = obj(
    ("name",),
    name=NAME,
    description=STRING,
    parameters=OBJECT,
    strict={"type": ["boolean", "null"]},
)
TOOL_CALL = obj(
    ("id", "type", "function"),
    id=STRING,
    type=const("function"),
    function=obj(("name", "arguments"), name=STRING, arguments=STRING),
)

# D-19: the standard parameters of a chat body (explain takes a chat body too).
SAMPLING: Schema = {
    "temperature": number(0, 2),
    "top_p": number(0, 1),
    "n": count(maximum=128),
    "max_tokens": count(),
    "max_completion_tokens": count(),
    "presence_penalty": number(-2, 2),
    "frequency_penalty": number(-2, 2),
    "stop": nullable({"anyOf": [STRING, array(STRING, maxItems=4)]}),
    "seed": {"type": ["integer", "null"]},
    "logit_bias": nullable({"type": "object", "additionalProperties": {"type": "number"}}),
    "tools": array(ref("Tool")),
    "tool_choice": ref("ToolChoice"),
    "parallel_tool_calls": BOOLEAN,
    "response_format": ref("ResponseFormat"),
    "stream": BOOLEAN,
    "stream_options": nullable(obj(include_usage=BOOLEAN)),
    "user": STRING,
    "metadata": METADATA,
}
# Switchyard's own fields (SPEC §2 and §3, D-13, D-14; docs/routing.md).
ROUTING: Schema = {
    "models": {**SLUGS, "maxItems": MAX_FALLBACK_MODELS, "description": "fallback models"},
    "residency": enum(*RESIDENCY_ORDER),
    "session_id": {"type": "string", "minLength": 1, "maxLength": 256},
    "provider": ref("ProviderPreferences"),
    "routing": closed(
        obj(
            mode=enum(*(mode.value for mode in Mode)),
            task=enum(*TASKS),
            language=enum(*sorted(ISO_639_1)),
            session_affinity=BOOLEAN,
        )
    ),
}

CONTENT_PART: Schema = {
    "anyOf": [
        obj(("type", "text"), type=const("text"), text=STRING),
        obj(
            ("type", "image_url"),
            type=const("image_url"),
            image_url=obj(("url",), url=IMAGE_URL, detail=enum("auto", "low", "high")),
        ),
    ]
}
MESSAGE = obj(
    ("role", "content"),
    role=enum(*sorted(CHAT_ROLES)),
    content={"anyOf": [STRING, array(CONTENT_PART), NULL]},
    name=STRING,
    tool_calls=array(TOOL_CALL),
    tool_call_id=STRING,
)
CHAT_REQUEST = obj(
    ("model", "messages"), model=MODEL, messages=array(MESSAGE, minItems=1), **SAMPLING, **ROUTING
)

RESPONSES_PART: Schema = {
    "anyOf": [
        obj(("type", "text"), type=enum("input_text", "output_text"), text=STRING),
        obj(("type", "image_url"), type=const("input_image"), image_url=IMAGE_URL),
    ]
}
RESPONSES_REQUEST = obj(
    ("model", "input"),
    model=MODEL,
    input={
        "anyOf": [
            {"type": "string", "minLength": 1},
            array(
                obj(
                    ("role", "content"),
                    role=enum("system", "developer", "user", "assistant"),
                    content={"anyOf": [STRING, array(RESPONSES_PART)]},
                ),
                minItems=1,
            ),
        ]
    },
    instructions=STRING,
    max_output_tokens=count(),
    temperature=SAMPLING["temperature"],
    top_p=SAMPLING["top_p"],
    stream=BOOLEAN,
    # The Responses API's function tools are flat: {type, name, parameters}.
    tools=array(
        obj(
            ("type", "name"),
            type=const("function"),
            name=NAME,
            description=STRING,
            parameters=OBJECT,
            strict={"type": ["boolean", "null"]},
        )
    ),
    tool_choice={
        "anyOf": [
            enum("none", "auto", "required"),
            obj(("type", "name"), type=const("function"), name=NAME),
        ]
    },
    parallel_tool_calls=BOOLEAN,
    user=STRING,
    metadata=METADATA,
    **ROUTING,
)

TOKENS = array(INTEGER, minItems=1)
EMBEDDINGS_REQUEST = obj(
    ("model", "input"),
    model=MODEL,
    input={
        "anyOf": [
            {"type": "string", "minLength": 1},
            array(STRING, minItems=1),
            TOKENS,
            array(TOKENS, minItems=1),
        ]
    },
    encoding_format=enum("float", "base64"),
    dimensions={"type": "integer", "minimum": 1},
    user=STRING,
    provider=ref("ProviderPreferences"),
    residency=ROUTING["residency"],
)

# The Anthropic Messages API (SPEC R-API-9, docs/anthropic.md) as
# gateway/api/anthropic/request.py reads it, with Switchyard's routing fields beside
# Anthropic's. What it refuses with a 400 is left out: server tools, document blocks, and
# the fields of `FIELDS` marked "refuse", documented as allowed only absent (or at the value
# that asks for nothing). Fields it does not name are dropped, not refused.
NONEMPTY: Schema = {"type": "string", "minLength": 1}
TEXT_BLOCK = obj(("type", "text"), type=const("text"), text=STRING, cache_control=OBJECT)
IMAGE_BLOCK = obj(
    ("type", "source"),
    type=const("image"),
    source={
        "anyOf": [
            obj(
                ("type", "media_type", "data"),
                type=const("base64"),
                media_type=NONEMPTY,
                data=NONEMPTY,
            ),
            obj(("type", "url"), type=const("url"), url=NONEMPTY),
        ]
    },
    cache_control=OBJECT,
)
TOOL_USE_BLOCK = obj(
    ("type", "id", "name", "input"),
    type=const("tool_use"),
    id=NONEMPTY,
    name=NONEMPTY,
    input=OBJECT,
)
TOOL_RESULT_BLOCK = obj(
    ("type", "tool_use_id"),
    type=const("tool_result"),
    tool_use_id=NONEMPTY,
    content={"anyOf": [STRING, array({"anyOf": [TEXT_BLOCK, IMAGE_BLOCK]}), NULL]},
    is_error={"type": ["boolean", "null"]},
    cache_control=OBJECT,
)
# Earlier turns' thinking, which clients send back: accepted and dropped (signed by
# Anthropic for one model, no other provider can read it).
THINKING_BLOCK = obj(
    ("type",), type=enum(*sorted(DROPPED_BLOCKS)), thinking=STRING, signature=STRING, data=STRING
)
ANTHROPIC_MESSAGE: Schema = {
    "anyOf": [
        obj(
            ("role", "content"),
            role=const("user"),
            content={
                "anyOf": [
                    STRING,
                    array({"anyOf": [TEXT_BLOCK, IMAGE_BLOCK, TOOL_RESULT_BLOCK]}, minItems=1),
                ]
            },
        ),
        obj(
            ("role", "content"),
            role=const("assistant"),
            content={
                "anyOf": [STRING, array({"anyOf": [TEXT_BLOCK, TOOL_USE_BLOCK, THINKING_BLOCK]})]
            },
        ),
    ]
}
ANTHROPIC_ONLY = "served by Anthropic's own servers alone"


def refused(reason: str, *neutral: Any) -> Schema:
    """A field the gateway answers with a 400 naming it unless it is absent, null or at a
    `neutral` value, which asks for nothing."""
    return {
        "anyOf": [NULL, *({"const": value} for value in neutral)],
        "description": f"a 400 otherwise: {reason}",
    }


CUSTOM_TOOL = obj(
    ("name", "input_schema"),
    type=const("custom"),
    name=NONEMPTY,
    description=STRING,
    input_schema=obj(("type",), type=const("object")),
    cache_control=OBJECT,
    allowed_callers=refused("only the model itself calls tools", ["direct"]),
)
MESSAGES_REQUEST = obj(
    ("model", "max_tokens", "messages"),
    model=MODEL,
    max_tokens={"type": "integer", "minimum": 1},
    messages=array(ANTHROPIC_MESSAGE, minItems=1),
    system={"anyOf": [STRING, array(TEXT_BLOCK), NULL]},
    stop_sequences=nullable(array(STRING, maxItems=MAX_STOP_SEQUENCES)),
    stream={"type": ["boolean", "null"]},
    temperature=number(0, 1),
    top_p=number(0, 1),
    top_k={"type": ["integer", "null"], "minimum": 0},
    metadata=obj(user_id={"type": ["string", "null"]}),  # the session too (R-EXE-7)
    tools={
        **array(CUSTOM_TOOL),
        "description": "custom tools; Anthropic's server tools "
        "(web search, code execution, …) are a 400",
    },
    tool_choice={
        "anyOf": [
            obj(("type",), type=enum("auto", "any", "none"), disable_parallel_tool_use=BOOLEAN),
            obj(
                ("type", "name"),
                type=const("tool"),
                name=NONEMPTY,
                disable_parallel_tool_use=BOOLEAN,
            ),
        ],
        "description": '"any" and "tool" need `tools`',
    },
    thinking={
        "anyOf": [
            obj(
                ("type", "budget_tokens"),
                type=const("enabled"),
                budget_tokens={
                    "type": "integer",
                    "minimum": MIN_THINKING_BUDGET,
                    "description": "less than `max_tokens`",
                },
            ),
            obj(("type",), type=enum("disabled", "adaptive", "between_tools")),
        ]
    },
    output_config=obj(
        effort=enum("low", "medium", "high", "xhigh", "max"),
        format=obj(("type", "schema"), type=const("json_schema"), schema=OBJECT),
    ),
    **ROUTING,
    container=refused(ANTHROPIC_ONLY),
    mcp_servers=refused(ANTHROPIC_ONLY, []),
    inference_geo=refused("send `residency`", "global"),
    thread=refused("send the whole conversation in `messages`"),
    compaction=refused(ANTHROPIC_ONLY),
)
# Anthropic's count takes no max_tokens; one sent is checked as for a message.
COUNT_TOKENS_REQUEST = {**MESSAGES_REQUEST, "required": ["model", "messages"]}
COUNT_TOKENS_NOTE = (
    "Routed as the Messages request would be, nothing recorded. Counted "
    "by the upstream when the endpoint it would try first is "
    "Anthropic-style; else, or when that upstream does not count, with the "
    "estimator routing uses (the context-window filter). A body the "
    "upstream refuses gets its 400 (413, 422). `max_tokens` may be left "
    "out, `thinking` included."
)

REQUEST_SCHEMAS: Schema = {
    "Tool": obj(("type", "function"), type=const("function"), function=FUNCTION),
    "ToolChoice": {
        "anyOf": [
            enum("none", "auto", "required"),
            obj(("type", "function"), type=const("function"), function=obj(("name",), name=NAME)),
        ]
    },
    "ResponseFormat": {
        "anyOf": [
            obj(("type",), type=const("text")),
            obj(("type",), type=const("json_object")),
            obj(
                ("type", "json_schema"),
                type=const("json_schema"),
                json_schema=obj(
                    ("name",),
                    name=NAME,
                    description=STRING,
                    schema=OBJECT,
                    strict={"type": ["boolean", "null"]},
                ),
            ),
        ]
    },
    # OpenRouter's provider object (R-BEY-10); an unknown key is a 400.
    "ProviderPreferences": closed(
        obj(
            order=SLUGS,
            only=SLUGS,
            ignore=SLUGS,
            regions=SLUGS,
            allow_fallbacks=BOOLEAN,
            sort=enum(*SORT_MODES),
            max_price=closed(
                obj(
                    prompt={"type": "number", "minimum": 0},
                    completion={"type": "number", "minimum": 0},
                )
            ),
            preferred_min_throughput={"type": "number", "exclusiveMinimum": 0},
            preferred_max_latency={"type": "number", "exclusiveMinimum": 0},
            require_parameters=BOOLEAN,
            zdr=BOOLEAN,
            data_collection=enum("allow", "deny"),
            quantizations=SLUGS,
        )
    ),
}

LISTED_MODEL = obj(
    ("id", "object", "created", "owned_by"),
    id=STRING,
    object=const("model"),
    created=INTEGER,
    owned_by=STRING,
)
RESPONSE_SCHEMAS: Schema = {
    # 409 adds `excluded`; 400/502/503/504 after upstream attempts add `attempts`.
    "Error": obj(
        ("error",),
        error=obj(
            ("message", "type", "code", "param"),
            message=STRING,
            type=STRING,
            code={"type": ["string", "null"]},
            param={"type": ["string", "null"]},
        ),
    ),
    # How the request was routed (R-API-5).
    "Switchyard": obj(
        ("trace_id", "model", "provider", "endpoint", "routing_reason"),
        trace_id=STRING,
        request_id=STRING,
        model=STRING,
        provider=STRING,
        endpoint=STRING,
        region=STRING,
        sovereignty_class=STRING,
        cost_estimate_usd={"type": "number"},
        routing_reason=STRING,
        attempts=INTEGER,
    ),
    "ChatCompletion": obj(
        ("id", "object", "created", "model", "choices"),
        id=STRING,
        object=const("chat.completion"),
        created=INTEGER,
        model=STRING,
        choices=array(
            obj(
                ("index", "message"),
                index=INTEGER,
                message=obj(
                    ("role",),
                    role=STRING,
                    content={"type": ["string", "null"]},
                    tool_calls=array(TOOL_CALL),
                ),
                finish_reason={"type": ["string", "null"]},
            )
        ),
        usage=OBJECT,
        switchyard=ref("Switchyard"),
    ),
    "Response": obj(
        ("id", "object", "status", "model", "output"),
        id=STRING,
        object=const("response"),
        created_at=INTEGER,
        status=enum("completed", "incomplete"),
        model=STRING,
        output=array(OBJECT),
        usage=OBJECT,
        switchyard=ref("Switchyard"),
    ),
    "Embeddings": obj(
        ("object", "data", "model"),
        object=const("list"),
        model=STRING,
        usage=OBJECT,
        data=array(
            obj(
                ("index", "embedding"),
                index=INTEGER,
                embedding={"anyOf": [array({"type": "number"}), STRING]},
            )
        ),
    ),
    "ModelList": obj(("object", "data"), object=const("list"), data=array(LISTED_MODEL)),
    "Model": LISTED_MODEL,
    "Trace": obj(
        ("id", "object", "request_id", "operation", "status_code", "attempts"),
        id=STRING,
        object=const("switchyard.trace"),
        request_id=STRING,
        operation=STRING,
        status_code=INTEGER,
        decision={"type": ["object", "array", "null"]},
        attempts=array(OBJECT),
    ),
    "Explanation": obj(
        ("object", "request", "decisions", "attempt_order", "reason"),
        object=const("switchyard.routing_explanation"),
        request=OBJECT,
        decisions=array(OBJECT),
        attempt_order=array(STRING),
        reason=STRING,
    ),
    "Health": obj(
        ("object", "window_s", "providers"),
        object=const("switchyard.health"),
        window_s={"type": "number"},
        providers=OBJECT,
    ),
}
# Anthropic's answers (gateway/api/anthropic/response.py, messages.anthropic_model_list).
ANTHROPIC_RESPONSE_SCHEMAS: Schema = {
    "AnthropicMessage": obj(
        ("id", "type", "role", "content", "model", "stop_reason", "stop_sequence", "usage"),
        id=STRING,
        type=const("message"),
        role=const("assistant"),
        # the text first, then each tool call, with an id Anthropic would accept back
        content=array(
            {
                "anyOf": [
                    obj(("type", "text"), type=const("text"), text=STRING),
                    obj(
                        ("type", "id", "name", "input"),
                        type=const("tool_use"),
                        id={"type": "string", "pattern": "^[a-zA-Z0-9_-]+$"},
                        name=STRING,
                        input=OBJECT,
                    ),
                ]
            }
        ),
        model=STRING,
        stop_reason=enum(*sorted({*STOP_REASONS.values(), "stop_sequence"})),
        stop_sequence={"type": ["string", "null"]},
        usage=obj(
            ("input_tokens", "output_tokens"),
            input_tokens=INTEGER,
            output_tokens=INTEGER,
            cache_read_input_tokens=INTEGER,
            cache_creation_input_tokens=INTEGER,
        ),
    ),
    "AnthropicTokenCount": obj(("input_tokens",), input_tokens=INTEGER),
    "AnthropicError": obj(
        ("type", "error"),
        type=const("error"),
        error=obj(
            ("type", "message"),
            type=enum(*sorted(set(ANTHROPIC_ERROR_TYPES.values()))),
            message=STRING,
        ),
    ),
    "AnthropicModelList": obj(
        ("data", "has_more", "first_id", "last_id"),
        data=array(
            obj(
                ("type", "id", "display_name", "created_at"),
                type=const("model"),
                id=STRING,
                display_name=STRING,
                created_at={"type": "string", "format": "date-time"},
            )
        ),
        has_more=BOOLEAN,
        first_id={"type": ["string", "null"]},
        last_id={"type": ["string", "null"]},
    ),
}


def _json(schema: Schema) -> Schema:
    return {JSON: {"schema": schema}}


ERRORS: Schema = {
    "4XX": {"description": "refused; nothing was charged", "content": _json(ref("Error"))},
    "5XX": {"description": "every upstream attempt failed", "content": _json(ref("Error"))},
}
# The Messages paths answer the chat path's statuses in Anthropic's envelope, typed by
# status (gateway.errors.ANTHROPIC_ERROR_TYPES).
ANTHROPIC_ERRORS: Schema = {
    **{
        str(status): {
            "description": f"`{kind}`; nothing was charged",
            "content": _json(ref("AnthropicError")),
        }
        for status, kind in ANTHROPIC_ERROR_TYPES.items()
        if status < 500
    },
    "5XX": {
        "description": "every upstream attempt failed (`api_error`, `overloaded_error`, "
        "`timeout_error`)",
        "content": _json(ref("AnthropicError")),
    },
}


def _header(description: str) -> Schema:
    return {"description": description, "schema": STRING}


# Where the `switchyard` block's facts go in a Messages answer, whose body is Anthropic's.
SWITCHYARD_HEADERS: Schema = {
    "X-Switchyard-Trace-Id": _header("the trace: `GET /v1/traces/{trace_id}`"),
    "X-Switchyard-Attempts": _header("the upstream attempts, a JSON array"),
    **{
        header: _header(
            f"`switchyard.{fact}`"
            + ("; not on streams, known only at their end" if fact == "cost_estimate_usd" else "")
        )
        for fact, header in FACT_HEADERS.items()
    },
}
# Who counted a `count_tokens` answer, and for which endpoint.
COUNT_HEADERS: Schema = {
    TOKEN_COUNT_HEADER: {
        "description": f"`{UPSTREAM}`: the endpoint's upstream counted; "
        f"`{ESTIMATED}`: the gateway's estimate",
        "schema": enum(UPSTREAM, ESTIMATED),
    },
    **{
        header: _header(
            f"the {fact} a Messages request would try first; absent when no endpoint would take it"
        )
        for fact, header in ENDPOINT_HEADERS.items()
    },
}
ANTHROPIC_VERSION = {
    "name": "anthropic-version",
    "in": "header",
    "required": False,
    "schema": STRING,
    "description": "any date is accepted; the trace records it",
}


# One server-sent event: a chat chunk, a Responses event, an Anthropic Messages event,
# the final `[DONE]`.
SSE_EVENT = obj(("data",), event=STRING, data=STRING)


def operation(
    summary: str,
    answer: str | Schema,
    body: Schema | None = None,
    *,
    streams: bool = False,
    errors: Schema = ERRORS,
    headers: Schema | None = None,
    **extra: Any,
) -> Schema:
    """An operation answering 200 with `answer` (a component's name, or a schema) and
    `headers`, or one of `errors` (the OpenAI envelope unless told)."""
    content = _json(ref(answer) if isinstance(answer, str) else answer)
    if streams:
        content["text/event-stream"] = {"schema": SSE_EVENT}  # with `"stream": true`
    ok: Schema = {"description": "OK", "content": content}
    if headers is not None:
        ok["headers"] = headers
    described: Schema = {"summary": summary, "responses": {"200": ok, **errors}, **extra}
    if body is not None:
        described["requestBody"] = {"required": True, "content": _json(body)}
    return described


TRACE_ID = {"name": "trace_id", "in": "path", "required": True, "schema": STRING}
MODELS_ANTHROPIC_VERSION = {
    **ANTHROPIC_VERSION,
    "description": "when sent (any value), the list is Anthropic's: `AnthropicModelList`",
}
MODEL_ID = {
    "name": "model_id",
    "in": "path",
    "required": True,
    "schema": STRING,
    "description": "a model id as listed; ids contain `/`",
}
SCHEMA: Schema = {
    "openapi": "3.1.0",
    "info": {
        "title": "Switchyard",
        "version": "1",
        "description": "OpenAI-compatible LLM gateway that routes by policy (docs/api.md).",
    },
    "security": [{"bearerAuth": []}, {"apiKeyAuth": []}],
    "paths": {
        "/v1/chat/completions": {
            "post": operation("Chat completion", "ChatCompletion", CHAT_REQUEST, streams=True)
        },
        "/v1/responses": {
            "post": operation(
                "Responses API, routed as chat", "Response", RESPONSES_REQUEST, streams=True
            )
        },
        "/v1/embeddings": {"post": operation("Embeddings", "Embeddings", EMBEDDINGS_REQUEST)},
        "/v1/messages": {
            "post": operation(
                "Anthropic Messages API, routed as chat",
                "AnthropicMessage",
                MESSAGES_REQUEST,
                streams=True,
                errors=ANTHROPIC_ERRORS,
                headers=SWITCHYARD_HEADERS,
                parameters=[ANTHROPIC_VERSION],
            )
        },
        "/v1/messages/count_tokens": {
            "post": operation(
                "Input tokens of a Messages request",
                "AnthropicTokenCount",
                COUNT_TOKENS_REQUEST,
                errors=ANTHROPIC_ERRORS,
                headers=COUNT_HEADERS,
                parameters=[ANTHROPIC_VERSION],
                description=COUNT_TOKENS_NOTE,
            )
        },
        "/v1/models": {
            "get": operation(
                "Models this key may use",
                {"oneOf": [ref("ModelList"), ref("AnthropicModelList")]},
                parameters=[MODELS_ANTHROPIC_VERSION],
            )
        },
        "/v1/models/{model_id}": {
            "get": operation("One model this key may use", "Model", parameters=[MODEL_ID])
        },
        "/v1/traces/{trace_id}": {
            "get": operation("A trace of your workspace", "Trace", parameters=[TRACE_ID])
        },
        "/v1/routing/explain": {
            "post": operation(
                "Routing decision for a chat body, no upstream call", "Explanation", CHAT_REQUEST
            )
        },
        "/health": {
            "get": operation("Live metrics per provider and endpoint", "Health", security=[])
        },
    },
    "components": {
        "schemas": {**REQUEST_SCHEMAS, **RESPONSE_SCHEMAS, **ANTHROPIC_RESPONSE_SCHEMAS},
        "securitySchemes": {
            "bearerAuth": {"type": "http", "scheme": "bearer", "description": "sk-sy-… key"},
            # as Anthropic's SDK and Claude Code send it (R-API-9); read on every path
            "apiKeyAuth": {
                "type": "apiKey",
                "in": "header",
                "name": "x-api-key",
                "description": "the same sk-sy-… key",
            },
        },
    },
}

_SCHEMA_JSON = orjson.dumps(SCHEMA)


@require_GET
async def openapi_json(request: HttpRequest) -> HttpResponse:
    """`GET /v1/openapi.json`: public, like any API's description."""
    return HttpResponse(_SCHEMA_JSON, content_type=JSON)
