"""The OpenAPI 3.1 description of the /v1 surface, served at `GET /v1/openapi.json`.

Data beside the views it describes, and small: the standard OpenAI parameters with the
types and ranges the gateway checks (SPEC D-19), Switchyard's routing fields (their enums
come from `routing`, so they cannot drift), the response fields clients rely on, and the
error envelope (R-API-3). Bodies allow extra fields, as the gateway does: unknown fields
pass through to the upstream. `tests/gateway/test_api_schema_fuzz.py` fuzzes the live
gateway against this description.
"""

from __future__ import annotations

from typing import Any

import orjson
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from gateway.request_path.parse import CHAT_ROLES
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
    return {"anyOf": [schema, {"type": "null"}]}


def number(low: float, high: float) -> Schema:
    return {"type": ["number", "null"], "minimum": low, "maximum": high}


def count(**constraints: Any) -> Schema:
    return {"type": ["integer", "null"], "minimum": 1, **constraints}


STRING: Schema = {"type": "string"}
INTEGER: Schema = {"type": "integer"}
BOOLEAN: Schema = {"type": "boolean"}
OBJECT: Schema = {"type": "object"}
NAME: Schema = {"type": "string", "pattern": "^[a-zA-Z0-9_-]{1,64}$"}
IMAGE_URL: Schema = {"type": "string", "pattern": "^(https?://|data:image/[a-z.+-]+;base64,)"}
SLUGS = array({"type": "string", "pattern": r"\S"})  # trimmed; blank is a 400
MODEL: Schema = {"type": "string", "minLength": 1, "examples": ["auto", "meta/llama-3.3-70b"]}
METADATA: Schema = {
    "type": "object",
    "maxProperties": 16,
    "additionalProperties": {"type": "string", "maxLength": 512},
}
FUNCTION = obj(("name",), name=NAME, description=STRING, parameters=OBJECT,
               strict={"type": ["boolean", "null"]})  # fmt: skip
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
    content={"anyOf": [STRING, array(CONTENT_PART), {"type": "null"}]},
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
    tools=array(obj(("type", "name"), type=const("function"), name=NAME, description=STRING,
                    parameters=OBJECT, strict={"type": ["boolean", "null"]})),
    tool_choice={"anyOf": [enum("none", "auto", "required"),
                           obj(("type", "name"), type=const("function"), name=NAME)]},
    parallel_tool_calls=BOOLEAN,
    user=STRING,
    metadata=METADATA,
    **ROUTING,
)  # fmt: skip

TOKENS = array(INTEGER, minItems=1)
EMBEDDINGS_REQUEST = obj(
    ("model", "input"),
    model=MODEL,
    input={"anyOf": [{"type": "string", "minLength": 1}, array(STRING, minItems=1), TOKENS,
                     array(TOKENS, minItems=1)]},
    encoding_format=enum("float", "base64"),
    dimensions={"type": "integer", "minimum": 1},
    user=STRING,
    provider=ref("ProviderPreferences"),
    residency=ROUTING["residency"],
)  # fmt: skip

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

MODEL = obj(
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
    "ModelList": obj(("object", "data"), object=const("list"), data=array(MODEL)),
    "Model": MODEL,
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


def _json(schema: Schema) -> Schema:
    return {JSON: {"schema": schema}}


ERRORS: Schema = {
    "4XX": {"description": "refused; nothing was charged", "content": _json(ref("Error"))},
    "5XX": {"description": "every upstream attempt failed", "content": _json(ref("Error"))},
}


# One server-sent event: a chat chunk, a Responses event, the final `[DONE]`.
SSE_EVENT = obj(("data",), event=STRING, data=STRING)


def operation(
    summary: str, answer: str, body: Schema | None = None, *, streams: bool = False, **extra: Any
) -> Schema:
    """An operation answering 200 with `answer` (a component), or the error envelope."""
    content = _json(ref(answer))
    if streams:
        content["text/event-stream"] = {"schema": SSE_EVENT}  # with `"stream": true`
    described: Schema = {
        "summary": summary,
        "responses": {"200": {"description": "OK", "content": content}, **ERRORS},
        **extra,
    }
    if body is not None:
        described["requestBody"] = {"required": True, "content": _json(body)}
    return described


TRACE_ID = {"name": "trace_id", "in": "path", "required": True, "schema": STRING}
MODEL_ID = {"name": "model_id", "in": "path", "required": True, "schema": STRING,
            "description": "a model id as listed; ids contain `/`"}  # fmt: skip
SCHEMA: Schema = {
    "openapi": "3.1.0",
    "info": {
        "title": "Switchyard",
        "version": "1",
        "description": "OpenAI-compatible LLM gateway that routes by policy (docs/api.md).",
    },
    "security": [{"bearerAuth": []}],
    "paths": {
        "/v1/chat/completions": {
            "post": operation("Chat completion", "ChatCompletion", CHAT_REQUEST, streams=True)
        },
        "/v1/responses": {
            "post": operation("Responses API, routed as chat", "Response", RESPONSES_REQUEST,
                              streams=True)
        },
        "/v1/embeddings": {
            "post": operation("Embeddings", "Embeddings", EMBEDDINGS_REQUEST)
        },
        "/v1/models": {"get": operation("Models this key may use", "ModelList")},
        "/v1/models/{model_id}": {
            "get": operation("One model this key may use", "Model", parameters=[MODEL_ID])
        },
        "/v1/traces/{trace_id}": {
            "get": operation("A trace of your workspace", "Trace", parameters=[TRACE_ID])
        },
        "/v1/routing/explain": {
            "post": operation("Routing decision for a chat body, no upstream call",
                              "Explanation", CHAT_REQUEST)
        },
        "/health": {
            "get": operation("Live metrics per provider and endpoint", "Health", security=[])
        },
    },
    "components": {
        "schemas": {**REQUEST_SCHEMAS, **RESPONSE_SCHEMAS},
        "securitySchemes": {
            "bearerAuth": {"type": "http", "scheme": "bearer", "description": "sk-sy-… key"}
        },
    },
}  # fmt: skip

_SCHEMA_JSON = orjson.dumps(SCHEMA)


@require_GET
async def openapi_json(request: HttpRequest) -> HttpResponse:
    """`GET /v1/openapi.json`: public, like any API's description."""
    return HttpResponse(_SCHEMA_JSON, content_type=JSON)
