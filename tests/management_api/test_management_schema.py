"""`GET /api/v1/schema/` (SPEC R-MGT-1): a valid OpenAPI document of the management API
alone, describing the keys resource with its real request and response shapes."""

from __future__ import annotations

import json

import pytest
import yaml
from drf_spectacular.drainage import GENERATOR_STATS
from drf_spectacular.validation import validate_schema
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db
SCHEMA = "/api/v1/schema/"
KEYS = "/api/v1/workspaces/{ws}/keys"
KEY = "/api/v1/workspaces/{ws}/keys/{id}"


@pytest.fixture
def schema():
    response = APIClient().get(SCHEMA)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/vnd.oai.openapi+json"
    return json.loads(response.content)


def test_the_schema_is_valid_openapi(schema):
    # when / then (raises on an invalid document)
    validate_schema(schema)


def test_the_schema_describes_only_the_management_api(schema):
    # then
    assert all(path.startswith("/api/v1/workspaces/{ws}/") for path in schema["paths"])
    assert {KEYS, KEY} <= set(schema["paths"])


def test_the_keys_operations_are_listed(schema):
    # then
    assert set(schema["paths"][KEYS]) == {"get", "post"}
    assert set(schema["paths"][KEY]) == {"get", "patch", "delete"}


def test_create_takes_name_and_expiry_and_answers_with_the_secret(schema):
    # given
    post = schema["paths"][KEYS]["post"]
    components = schema["components"]["schemas"]
    # then
    body = post["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert body == "#/components/schemas/ApiKeyCreateRequest"
    assert set(components["ApiKeyCreateRequest"]["properties"]) == {
        "name", "expires_at", "budget", "limits",
    }  # fmt: skip
    assert "required" not in components["ApiKeyCreateRequest"]
    created = post["responses"]["201"]["content"]["application/json"]["schema"]["$ref"]
    assert created == "#/components/schemas/IssuedApiKey"
    assert "key" in components["IssuedApiKey"]["required"]


def test_a_key_as_shown_holds_no_secret(schema):
    # given
    shown = schema["components"]["schemas"]["ApiKey"]["properties"]
    # then
    assert set(shown) == {
        "id", "name", "prefix", "status", "created_at", "expires_at", "revoked_at",
        "allowed_models", "preset", "routes", "settings_expires_at", "budget", "limits",
    }  # fmt: skip
    status = schema["components"]["schemas"]["ApiKeyStatus"]
    assert shown["status"] == {
        "allOf": [{"$ref": "#/components/schemas/ApiKeyStatus"}],
        "readOnly": True,
    }
    assert status == {"type": "string", "enum": ["active", "expired", "revoked"]}


def test_patch_takes_name_and_expiry_all_optional(schema):
    # given
    patch = schema["paths"][KEY]["patch"]
    patched = schema["components"]["schemas"]["PatchedApiKeyRequest"]
    # then
    body = patch["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert body == "#/components/schemas/PatchedApiKeyRequest"
    assert set(patched["properties"]) == {
        "name",
        "expires_at",
        "allowed_models",
        "preset",
        "routes",
        "budget",
        "limits",
    }
    assert "required" not in patched


def test_errors_are_described_in_the_envelope(schema):
    # given
    post = schema["paths"][KEYS]["post"]["responses"]
    delete = schema["paths"][KEY]["delete"]["responses"]
    # then
    assert set(post) == {"201", "400", "401", "403", "404"}
    assert set(delete) == {"204", "401", "403", "404"}
    error = post["401"]["content"]["application/json"]["schema"]["$ref"]
    assert error == "#/components/schemas/Error"
    assert set(schema["components"]["schemas"]["ErrorDetail"]["properties"]) == {
        "message", "type", "code", "param",
    }  # fmt: skip


def test_both_ways_in_are_security_schemes(schema):
    # then
    assert schema["components"]["securitySchemes"]["managementToken"]["scheme"] == "bearer"
    assert schema["components"]["securitySchemes"]["cookieAuth"]["in"] == "cookie"
    assert schema["paths"][KEYS]["get"]["security"] == [
        {"managementToken": []},
        {"cookieAuth": []},
    ]


def test_the_schema_is_also_served_as_yaml():
    # when
    response = APIClient().get(SCHEMA, {"format": "yaml"})
    # then
    assert response.status_code == 200
    assert KEYS in yaml.safe_load(response.content)["paths"]


def test_drawing_the_schema_raises_no_warning():
    # given
    GENERATOR_STATS.reset()
    # when
    response = APIClient().get(SCHEMA)
    # then
    assert response.status_code == 200
    assert not GENERATOR_STATS, (GENERATOR_STATS._warn_cache, GENERATOR_STATS._error_cache)
