"""Client-compatibility suite: real client libraries against the shared live gateway
(tests/conftest.py `fresh_live`), each feature once per upstream API style.

Every test here runs under `loopback_only()`: a connection or DNS look-up to anything but
the loopback interface fails the test, whether or not the library swallowed the error. The
gateway and the fakes run in subprocesses and talk to 127.0.0.1 only
(tests/live/installation.py)."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pydantic
import pytest

from tests.live.installation import Live

LLAMA = "meta/llama-3.3-70b"  # OpenAI-style upstreams `cheap` (first by price) and `pricey`
SONNET = "anthropic/claude-sonnet-4"  # Anthropic-style upstream `anthro`, translated
EMBEDDING = "openai/text-embedding-3-small"  # OpenAI-style `cheap` only


@dataclass(frozen=True)
class Routed:
    """A model of the catalog and the fake upstream that answers it."""

    model: str
    fake: str  # the fake's name, as in "This is a fake reply from <fake>."

    @property
    def reply(self) -> str:
        return f"fake reply from {self.fake}"

    @property
    def vendor(self) -> str:
        return self.model.split("/")[0]


BY_STYLE = [
    pytest.param(Routed(LLAMA, "cheap"), id="openai-style"),
    pytest.param(Routed(SONNET, "anthro"), id="anthropic-style"),
]


@pytest.fixture(params=BY_STYLE)
def routed(request: pytest.FixtureRequest) -> Routed:
    """Parametrises a test over both upstream API styles."""
    return request.param


@pytest.fixture
def gateway(fresh_live: Live) -> Live:
    return fresh_live


@pytest.fixture
def key(fresh_live: Live) -> str:
    return fresh_live.keys["acme"]


class Person(pydantic.BaseModel):
    name: str
    age: int


# What the fakes fill in for Person's schema (fakeupstream/structured.py): "fake"
# for strings, 1 for an unbounded integer.
FAKE_PERSON = Person(name="fake", age=1)
WEATHER_PROMPT = "What is the weather in Paris?"  # "weather" makes the fake call the tool
PAUSE_PROMPT = "Say something."  # no "weather": the fake answers text
# Text requests set a limit: Anthropic requires `max_tokens`, so without one the gateway
# sends its default (4096) and the fake answers with 4096 tokens, which only slows tests.
MAX_TOKENS = 24
WEATHER_ARGUMENTS = {"location": "Paris"}  # what the fake asks for with a location tool
WEATHER_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"location": {"type": "string", "description": "A city"}},
    "required": ["location"],
}
CHAT_WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city",
        "parameters": WEATHER_PARAMETERS,
    },
}


# --- nothing but loopback -------------------------------------------------------------


def _loopback_host(host: Any) -> bool:
    if host is None:  # getaddrinfo(None, port): the local wildcard
        return True
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    if not isinstance(host, str):
        return False
    if host.lower() in ("localhost", "localhost.", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _loopback_address(address: Any) -> bool:
    if isinstance(address, str | bytes):  # AF_UNIX path
        return True
    return isinstance(address, tuple) and bool(address) and _loopback_host(address[0])


@contextlib.contextmanager
def loopback_only() -> Iterator[list[str]]:
    """Refuse, and record, every DNS look-up and socket connection that is not to the
    loopback interface (127.0.0.0/8, ::1, localhost) while the block runs. Yields the
    record; the caller asserts it stays empty (a library may swallow the refusal)."""
    attempts: list[str] = []
    original_getaddrinfo = socket.getaddrinfo
    original_connect = socket.socket.connect
    original_connect_ex = socket.socket.connect_ex

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not _loopback_host(host):
            attempts.append(f"DNS look-up of {host!r}")
            raise socket.gaierror(socket.EAI_NONAME, f"loopback_only: refused {host!r}")
        return original_getaddrinfo(host, *args, **kwargs)

    def connect(self: socket.socket, address: Any) -> None:
        if not _loopback_address(address):
            attempts.append(f"connection to {address!r}")
            raise ConnectionRefusedError(f"loopback_only: refused {address!r}")
        return original_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if not _loopback_address(address):
            attempts.append(f"connection to {address!r}")
            return 111  # ECONNREFUSED
        return original_connect_ex(self, address)

    socket.getaddrinfo = getaddrinfo
    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    try:
        yield attempts
    finally:
        socket.getaddrinfo = original_getaddrinfo
        socket.socket.connect = original_connect  # type: ignore[method-assign]
        socket.socket.connect_ex = original_connect_ex  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _no_internet(gateway: Live) -> Iterator[None]:
    """Every client test reaches the gateway on 127.0.0.1 and nothing else. (Requests
    `gateway` first, so the live installation starts outside the guard.)"""
    assert _loopback_host(urlsplit(gateway.base_url).hostname)
    with loopback_only() as attempts:
        yield
    assert attempts == [], f"a client tried to reach beyond loopback: {attempts}"
