"""Unknown paths and wrong methods answer the OpenAI error envelope, never Django's HTML
(SPEC R-API-3), with `X-Request-Id` (D-10), through a live gateway."""

from __future__ import annotations

import httpx
import pytest

pytestmark = pytest.mark.live

UNKNOWN_PATHS = [
    ("POST", "/v1/assistants"),
    ("GET", "/v1/batches"),
    ("POST", "/v1/completions"),
    ("GET", "/v1/model/x"),  # /v1/models/{id} is a route: a missing id is model_not_found
    ("GET", "/v1/models/"),
    ("POST", "/v1/chat/completions/"),
    ("GET", "/v1/traces/"),
    ("GET", "/v1"),
    ("GET", "/nope"),
    ("POST", "/nope"),
    ("GET", "/metrics/"),
    ("POST", "/v1/messages/"),  # in Anthropic's envelope, as every /v1/messages answer
]
WRONG_METHODS = [
    ("GET", "/v1/chat/completions", "POST"),
    ("PUT", "/v1/responses", "POST"),
    ("GET", "/v1/embeddings", "POST"),
    ("GET", "/v1/routing/explain", "POST"),
    ("GET", "/v1/messages", "POST"),
    ("GET", "/v1/messages/count_tokens", "POST"),
    ("DELETE", "/v1/models", "GET"),
    ("POST", "/v1/models", "GET"),
    ("POST", "/health", "GET"),
    ("POST", "/v1/openapi.json", "GET"),
    ("PUT", "/v1/traces/abc", "GET, HEAD, OPTIONS"),  # the DRF view's own 405
]
CALLERS = ["valid key", "no key", "bad key"]


def _headers(live, caller: str) -> dict[str, str]:
    if caller == "valid key":
        return {"Authorization": f"Bearer {live.keys['acme']}"}
    if caller == "bad key":
        return {"Authorization": "Bearer sk-sy-nope-nope"}
    return {}


def _call(live, method: str, path: str, headers: dict[str, str]) -> httpx.Response:
    root = live.base_url.removesuffix("/v1")
    body = b"{}" if method in ("POST", "PUT") else None
    return httpx.request(method, root + path, headers=headers, content=body, timeout=10)


def _assert_envelope(response: httpx.Response) -> dict[str, object]:
    """The OpenAI envelope, or on the Messages paths Anthropic's (SPEC R-API-9)."""
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    if response.request.url.path.startswith("/v1/messages"):
        assert set(body) == {"type", "error"}
        assert (body["type"], set(body["error"])) == ("error", {"type", "message"})
    else:
        assert set(body) == {"error"}
        assert set(body["error"]) >= {"message", "type", "code", "param"}
    assert isinstance(body["error"]["message"], str)
    assert body["error"]["message"]
    assert len(response.headers["x-request-id"]) >= 16
    return body["error"]


@pytest.fixture
def log_offset(fresh_live) -> int:
    return len(fresh_live.log_path.read_text())


def _new_log(live, offset: int) -> str:
    return live.log_path.read_text()[offset:]


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize(("method", "path"), UNKNOWN_PATHS)
def test_unknown_path_is_a_json_404(fresh_live, log_offset, caller, method, path):
    # when
    response = _call(fresh_live, method, path, _headers(fresh_live, caller))
    # then
    error = _assert_envelope(response)
    if caller == "valid key":
        assert response.status_code == 404
    assert response.status_code in (401, 404)  # a bad key may be refused first
    if response.status_code == 404:
        assert error.get("code", "unknown_path") == "unknown_path"  # none in Anthropic's
        assert error["type"] == "not_found_error"
        assert error["message"].startswith(f"Unknown path {path}.")
        assert response.headers["x-should-retry"] == "false"
    log = _new_log(fresh_live, log_offset)
    assert "Traceback" not in log
    assert "was never awaited" not in log


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize(("method", "path", "allowed"), WRONG_METHODS)
def test_wrong_method_is_a_json_405_naming_the_allowed_methods(
    fresh_live, log_offset, caller, method, path, allowed
):
    # when
    response = _call(fresh_live, method, path, _headers(fresh_live, caller))
    # then
    error = _assert_envelope(response)
    if caller == "valid key":
        assert response.status_code == 405
    assert response.status_code in (401, 405)
    if response.status_code == 405:
        assert error.get("code", "method_not_allowed") == "method_not_allowed"
        assert error["type"] == "invalid_request_error"
        assert response.headers["allow"] == allowed
        assert response.headers["x-should-retry"] == "false"
    log = _new_log(fresh_live, log_offset)
    assert "Traceback" not in log
    assert "was never awaited" not in log


def test_an_unknown_path_keeps_the_callers_request_id_and_calls_no_upstream(fresh_live):
    # when
    headers = {**_headers(fresh_live, "valid key"), "X-Request-Id": "client-req.42"}
    response = _call(fresh_live, "POST", "/v1/assistants", headers)
    # then
    assert response.status_code == 404
    assert response.headers["x-request-id"] == "client-req.42"
    assert all(fake.stats()["requests"] == 0 for fake in fresh_live.fakes.values())


def test_a_trailing_slash_is_not_redirected(fresh_live):
    # when
    response = _call(fresh_live, "POST", "/v1/chat/completions/", _headers(fresh_live, "valid key"))
    # then: no APPEND_SLASH redirect in either direction, just the envelope
    assert response.status_code == 404
    assert "location" not in response.headers


def test_the_console_keeps_its_html(fresh_live):
    # when
    root = fresh_live.base_url.removesuffix("/v1")
    login = httpx.get(f"{root}/admin/login/")
    bare = httpx.get(f"{root}/admin")
    sign_in = httpx.get(f"{root}/console/sign-in/")
    unknown = httpx.get(f"{root}/console/acme/no-such-page/")
    # then
    assert login.status_code == 200
    assert login.headers["content-type"].startswith("text/html")
    assert (bare.status_code, bare.headers["location"]) == (301, "/admin/")
    assert sign_in.status_code == 200
    assert sign_in.headers["content-type"].startswith("text/html")
    assert unknown.status_code == 404
    assert unknown.headers["content-type"].startswith("text/html")
