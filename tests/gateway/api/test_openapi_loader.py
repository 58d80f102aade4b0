"""The loader of the /v1 OpenAPI document (gateway/api/openapi.py): `!code` tags become the
code's values, and a tag naming nothing there, or a value there the document never uses,
is an error, so the registry of code values and the document cannot part. The document's
content is checked against the code in test_openapi_document.py."""

from __future__ import annotations

import asyncio

import orjson
import pytest
from django.test import RequestFactory

from gateway.api.openapi import (
    CODE_VALUES,
    DOCUMENT,
    SCHEMA,
    DocumentError,
    load_document,
    openapi_json,
)

HEADERS = {"model": "X-Model", "provider": "X-Provider"}


def test_a_tag_is_the_code_value_it_names():
    # given
    text = "limit: !code LIMIT\nroles: {enum: !code ROLES}\n"
    # when
    document = load_document(text, {"LIMIT": 4, "ROLES": ["assistant", "user"]})
    # then
    assert document == {"limit": 4, "roles": {"enum": ["assistant", "user"]}}


def test_a_tag_with_a_key_is_one_entry_of_a_mapping_and_may_be_a_key():
    # given
    text = "headers:\n  !code HEADERS[model]: a\n  !code HEADERS[provider]: b\n"
    # when
    document = load_document(text, {"HEADERS": HEADERS})
    # then
    assert document == {"headers": {"X-Model": "a", "X-Provider": "b"}}
    assert list(document["headers"]) == ["X-Model", "X-Provider"]


def test_a_mapping_named_whole_is_used_whole():
    # when
    document = load_document("headers: !code HEADERS\n", {"HEADERS": HEADERS})
    # then
    assert document == {"headers": HEADERS}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: 1\nb: !code LIMTI\n", r"line 2: !code LIMTI: no such code value"),
        ("a: !code HEADERS[region]\n", r"line 1: !code HEADERS\[region\]: HEADERS has no key"),
        ("a: !code LIMIT[model]\n", r"line 1: !code LIMIT\[model\]: LIMIT has no key"),
        ("a: !code HEADERS[]\n", r"line 1: !code HEADERS\[\]: not NAME or NAME\[key\]"),
    ],
)
def test_a_tag_naming_nothing_in_the_code_is_refused(text, message):
    # when / then
    with pytest.raises(DocumentError, match=message):
        load_document(text, {"LIMIT": 4, "HEADERS": HEADERS})


def test_a_code_value_the_document_never_uses_is_refused():
    # when / then
    with pytest.raises(DocumentError, match=r"never uses: UNUSED$"):
        load_document("limit: !code LIMIT\n", {"LIMIT": 4, "UNUSED": [1]})


def test_a_key_of_a_mapping_used_by_key_that_the_document_leaves_out_is_refused():
    # when / then
    with pytest.raises(DocumentError, match=r"never uses: HEADERS\[provider\]$"):
        load_document("a: !code HEADERS[model]\n", {"HEADERS": HEADERS})


def test_the_document_is_served_as_loaded_from_its_file():
    # given
    loaded = load_document(DOCUMENT.read_text(encoding="utf-8"), CODE_VALUES)
    # when
    response = asyncio.run(openapi_json(RequestFactory().get("/v1/openapi.json")))
    # then
    assert response.content == orjson.dumps(SCHEMA) == orjson.dumps(loaded)
    assert response["Content-Type"] == "application/json"
    assert list(SCHEMA) == ["openapi", "info", "security", "paths", "components"]
