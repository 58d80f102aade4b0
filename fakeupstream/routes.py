"""The fake upstream as one request handler: routes, the `down` switch, authentication
and body parsing for /v1, and the /_fake control API.

Checks run in this order, each answering in the provider's error shape: unknown path or
method, `down`, credentials (and `anthropic-version`), JSON body, served model; then the
endpoint validates its body and the fault for the request is chosen.
"""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import orjson

from fakeupstream import endpoints
from fakeupstream.connection import Connection, Request
from fakeupstream.delivery import JSON, ApiStyle, BadRequest, Exchange
from fakeupstream.faults import parse_fault_script
from fakeupstream.profiles import CacheMode, FakeSettings
from fakeupstream.state import ServerState


@dataclass(frozen=True, slots=True)
class Route:
    method: str
    style: ApiStyle
    handler: Callable[[Exchange], Awaitable[None]]


ROUTES = {
    "/v1/chat/completions": Route("POST", ApiStyle.OPENAI, endpoints.chat_completions),
    "/v1/messages": Route("POST", ApiStyle.ANTHROPIC, endpoints.messages),
    "/v1/messages/count_tokens": Route("POST", ApiStyle.ANTHROPIC, endpoints.count_tokens),
    "/v1/embeddings": Route("POST", ApiStyle.OPENAI, endpoints.embeddings),
    "/v1/models": Route("GET", ApiStyle.OPENAI, endpoints.list_models),
}


class FakeUpstream:
    """The request handler `Connection` calls; holds the process's state."""

    def __init__(self, settings: FakeSettings) -> None:
        self.state = ServerState(settings)

    async def __call__(self, request: Request, conn: Connection) -> None:
        if request.path.startswith("/_fake/"):
            answer_control(self.state, request, conn)
            return
        self.state.record(request)
        self.state.in_flight += 1
        try:
            await self._answer(request, conn)
        except asyncio.CancelledError:
            self.state.cancelled += 1  # the client hung up while this was answering
            raise
        finally:
            self.state.in_flight -= 1

    async def _answer(self, request: Request, conn: Connection) -> None:
        route = ROUTES.get(request.path.rstrip("/"))
        ex = Exchange(request, conn, self.state, route.style if route else ApiStyle.OPENAI)
        if route is None:
            ex.send_error(404, f"Unknown request URL: {request.method} {request.path}")
        elif request.method != route.method:
            ex.send_error(405, f"Method {request.method} not allowed on {request.path}")
        elif self.state.script.down:
            ex.send_error(503, "The fake upstream is down (fault script 'down').")
        else:
            await _answer_v1(ex, route)


async def _answer_v1(ex: Exchange, route: Route) -> None:
    problem = credential_problem(ex)
    if problem is not None:
        ex.send_error(*problem)
        return
    try:
        if route.method == "POST":
            ex.body = _parse_json(ex.request.body)
        if endpoints.check_model(ex):
            await route.handler(ex)
    except BadRequest as exc:
        ex.send_error(400, str(exc))


def credential_problem(ex: Exchange) -> tuple[int, str] | None:
    """(status, message) when the request's credentials are refused, else None.

    OpenAI routes need `Authorization: Bearer <token>`; the Anthropic ones (/v1/messages
    and its count_tokens) take `x-api-key` or `Authorization` and need `anthropic-version`.
    With `--api-key K`, only K passes.
    """
    headers = ex.request.headers
    authorization = headers.get("authorization", "")
    scheme, _, token = authorization.partition(" ")
    bearer = token.strip() if scheme.lower() == "bearer" else ""
    if ex.style is ApiStyle.ANTHROPIC:
        credential = headers.get("x-api-key") or bearer or authorization.strip()
    else:
        credential = bearer
    if not credential:
        return 401, "Missing credentials: send 'Authorization: Bearer <key>'."
    expected = ex.state.settings.api_key
    if expected is not None and not hmac.compare_digest(credential.encode(), expected.encode()):
        return 401, "Incorrect API key provided."
    if ex.style is ApiStyle.ANTHROPIC and not headers.get("anthropic-version"):
        return 400, "anthropic-version: header is required"
    return None


def _parse_json(raw: bytes) -> object:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise BadRequest("The request body is not valid JSON.") from None


def answer_control(state: ServerState, request: Request, conn: Connection) -> None:
    """`/_fake/*`: health, stats, reset, the fault script and the prompt-cache mode; never
    counted nor faulted."""
    action = (request.method, request.path.rstrip("/"))
    if action == ("GET", "/_fake/health"):
        conn.respond(200, "text/plain", b"ok")
    elif action == ("GET", "/_fake/stats"):
        conn.respond(200, JSON, orjson.dumps(state.stats()))
    elif action == ("POST", "/_fake/reset"):
        state.reset()
        conn.respond(200, JSON, b'{"ok": true}')
    elif action == ("POST", "/_fake/release"):
        state.released.set()  # the held requests answer, and later holds pass at once
        conn.respond(200, JSON, b'{"released": true}')
    elif action == ("POST", "/_fake/faults"):
        try:
            state.script = parse_fault_script(orjson.loads(request.body or b"{}"))
        except (orjson.JSONDecodeError, ValueError) as exc:
            conn.respond(400, JSON, orjson.dumps({"error": str(exc)}))
            return
        conn.respond(200, JSON, orjson.dumps(state.script.describe()))
    elif action == ("POST", "/_fake/echo"):
        try:
            echo = orjson.loads(request.body or b"{}").get("echo")
        except (orjson.JSONDecodeError, AttributeError):
            echo = None
        if not isinstance(echo, bool):
            conn.respond(400, JSON, orjson.dumps({"error": "echo must be true or false"}))
            return
        state.echo = echo
        conn.respond(200, JSON, orjson.dumps({"echo": state.echo}))
    elif action == ("POST", "/_fake/cache"):
        try:
            mode = orjson.loads(request.body or b"{}").get("cached_tokens")
            state.cache_mode = CacheMode(mode)
        except (orjson.JSONDecodeError, AttributeError, ValueError):
            known = ", ".join(m.value for m in CacheMode)
            conn.respond(400, JSON, orjson.dumps({"error": f"cached_tokens must be {known}"}))
            return
        conn.respond(200, JSON, orjson.dumps({"cached_tokens": state.cache_mode.value}))
    else:
        conn.respond(404, JSON, orjson.dumps({"error": f"no control action {action}"}))
