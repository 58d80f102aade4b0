"""`GET /api/v1/schema/` (SPEC R-MGT-1) describes the presets, routes, key-settings,
budgets and rate-limits resources with their real request and response shapes."""

from __future__ import annotations

import json

import pytest
from drf_spectacular.validation import validate_schema
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db
WS = "/api/v1/workspaces/{ws}"


@pytest.fixture
def schema():
    response = APIClient().get("/api/v1/schema/")
    assert response.status_code == 200
    return json.loads(response.content)


def body_of(operation: dict) -> str:
    return operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]


def answer_of(operation: dict, status: str = "200") -> dict:
    return operation["responses"][status]["content"]["application/json"]["schema"]


def test_the_schema_stays_valid_openapi(schema):
    # when / then (raises on an invalid document)
    validate_schema(schema)


def test_the_new_paths_and_their_methods_are_listed(schema):
    # then
    methods = {path: set(ops) - {"parameters"} for path, ops in schema["paths"].items()}
    assert {path: m for path, m in methods.items() if "/keys" not in path} == {
        f"{WS}/presets": {"get", "post"},
        f"{WS}/presets/{{slug}}": {"get", "put", "patch", "delete"},
        f"{WS}/routes": {"get"},
        f"{WS}/routes/{{slug}}": {"get"},
        f"{WS}/routes/{{slug}}/versions": {"get", "post"},
        f"{WS}/routes/{{slug}}/versions/{{n}}": {"get"},
        f"{WS}/routes/{{slug}}/diff": {"get"},
        f"{WS}/routes/{{slug}}/deploy": {"post"},
        f"{WS}/routes/{{slug}}/rollback": {"post"},
        f"{WS}/routes/{{slug}}/replay": {"post"},
        f"{WS}/credentials": {"get", "post"},
        f"{WS}/credentials/{{provider}}": {"get", "put", "delete"},
        f"{WS}/budgets": {"get", "post"},
        f"{WS}/budgets/{{id}}": {"delete"},
        f"{WS}/limits": {"get", "put"},
        f"{WS}/policy": {"get", "put"},
        f"{WS}/audit": {"get"},
        f"{WS}/traces": {"get"},
        f"{WS}/traces/{{trace_id}}": {"get"},
    }
    assert methods[f"{WS}/keys"] == {"get", "post"}
    assert methods[f"{WS}/keys/{{id}}"] == {"get", "patch", "delete"}


def test_a_preset_has_its_fields_both_ways(schema):
    # given
    components = schema["components"]["schemas"]
    presets = schema["paths"][f"{WS}/presets"]
    one = schema["paths"][f"{WS}/presets/{{slug}}"]
    fields = {"slug", "allowed_models", "provider_allow", "provider_ignore", "default_prompt",
              "default_params"}  # fmt: skip
    # then
    assert body_of(presets["post"]) == "#/components/schemas/PresetRequest"
    assert set(components["PresetRequest"]["properties"]) == fields
    assert components["PresetRequest"]["required"] == ["slug"]
    assert body_of(one["put"]) == "#/components/schemas/PresetReplaceRequest"
    assert "required" not in components["PresetReplaceRequest"]
    assert body_of(one["patch"]) == "#/components/schemas/PatchedPresetRequest"
    assert answer_of(presets["post"], "201") == {"$ref": "#/components/schemas/Preset"}
    assert set(components["Preset"]["properties"]) == fields
    assert set(one["delete"]["responses"]) == {"204", "400", "401", "403", "404"}


def test_routes_versions_and_operations_have_their_shapes(schema):
    # given
    components = schema["components"]["schemas"]
    paths = schema["paths"]
    versions = paths[f"{WS}/routes/{{slug}}/versions"]
    # then
    assert answer_of(paths[f"{WS}/routes"]["get"])["items"] == {
        "$ref": "#/components/schemas/Route"
    }
    assert set(components["Route"]["properties"]) == {
        "slug", "deployed_version", "newest_version", "created_at", "updated_at",
    }  # fmt: skip
    assert "content" in components["RouteDetail"]["properties"]
    assert body_of(versions["post"]) == "#/components/schemas/RouteBodyRequest"
    assert set(components["RouteBodyRequest"]["properties"]) == {
        "slug", "description", "models", "start", "nodes", "rollout_guard", "message",
    }  # fmt: skip
    assert set(versions["post"]["responses"]) >= {"200", "201", "400"}
    assert answer_of(versions["post"], "201") == {"$ref": "#/components/schemas/RouteVersionDetail"}
    assert answer_of(versions["get"])["items"] == {"$ref": "#/components/schemas/RouteVersion"}
    for operation in ("deploy", "rollback"):
        post = paths[f"{WS}/routes/{{slug}}/{operation}"]["post"]
        assert body_of(post) == "#/components/schemas/VersionChoiceRequest"
        assert answer_of(post) == {"$ref": "#/components/schemas/RouteDeployment"}
    diff = paths[f"{WS}/routes/{{slug}}/diff"]["get"]
    query = {p["name"]: p.get("required", False) for p in diff["parameters"] if p["in"] == "query"}
    assert query == {"from": True, "to": False}
    assert set(components["RouteDiff"]["properties"]) == {"from_version", "to_version", "lines"}
    number = paths[f"{WS}/routes/{{slug}}/versions/{{n}}"]["get"]["parameters"]
    assert {"name": "n", "in": "path", "type": "integer"} in [
        {"name": p["name"], "in": p["in"], "type": p["schema"]["type"]} for p in number
    ]


def test_a_key_shows_its_settings_and_patch_takes_them(schema):
    # given
    components = schema["components"]["schemas"]
    keys = schema["paths"][f"{WS}/keys"]
    # then
    settings = {"allowed_models", "preset", "routes", "settings_expires_at", "budget", "limits"}
    assert settings <= set(components["ApiKey"]["properties"])
    assert settings <= set(components["IssuedApiKey"]["properties"])
    assert set(components["PatchedApiKeyRequest"]["properties"]) == {
        "name", "expires_at", "allowed_models", "preset", "routes", "budget", "limits",
    }  # fmt: skip
    assert body_of(keys["post"]) == "#/components/schemas/ApiKeyCreateRequest"
    assert set(components["ApiKeyCreateRequest"]["properties"]) == {
        "name", "expires_at", "budget", "limits",
    }  # fmt: skip
    budget = components["ApiKey"]["properties"]["budget"]
    assert (budget["allOf"], budget["nullable"]) == ([{"$ref": "#/components/schemas/BudgetRule"}],
                                                     True)  # fmt: skip


def test_budgets_and_limits_have_their_shapes(schema):
    # given
    components = schema["components"]["schemas"]
    budgets = schema["paths"][f"{WS}/budgets"]
    limits = schema["paths"][f"{WS}/limits"]
    configured = {"id", "source", "scope", "key_name", "period", "usd", "alerts"}
    spending = {"spent_usd", "reserved_usd", "remaining_usd", "requests", "period_start",
                "resets_at"}  # fmt: skip
    limit_fields = {"requests_per_minute", "tokens_per_minute", "concurrent"}
    # then
    assert answer_of(budgets["get"])["items"] == {"$ref": "#/components/schemas/BudgetStatus"}
    assert set(components["BudgetStatus"]["properties"]) == configured | spending
    assert "503" in budgets["get"]["responses"]
    assert body_of(budgets["post"]) == "#/components/schemas/BudgetBodyRequest"
    assert set(components["BudgetBodyRequest"]["properties"]) == {
        "key_name", "period", "usd", "alerts",
    }  # fmt: skip
    assert components["BudgetBodyRequest"]["required"] == ["period", "usd"]
    assert answer_of(budgets["post"], "201") == {"$ref": "#/components/schemas/Budget"}
    assert set(components["Budget"]["properties"]) == configured
    assert answer_of(limits["get"])["items"] == {"$ref": "#/components/schemas/RateLimitStatus"}
    assert set(components["RateLimitStatus"]["properties"]) == {
        "scope", "key_name", "in_use"} | limit_fields  # fmt: skip
    assert set(components["LimitInUse"]["properties"]) == {"used", "remaining", "reset_s"}
    assert set(components["RateLimit"]["properties"]) == {"scope", "key_name"} | limit_fields
    assert body_of(limits["put"]) == "#/components/schemas/RateLimitBodyRequest"
    assert set(components["RateLimitBodyRequest"]["properties"]) == {"key_name"} | limit_fields
    assert "required" not in components["RateLimitBodyRequest"]
