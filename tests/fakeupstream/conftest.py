"""Fixtures for the fake upstream's tests: one shared default server, reset before each
test, and a helper to read SSE streams. No Django needed."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from fakeupstream.process import FakeUpstreamProcess, running_fake_upstream

OPENAI_AUTH = {"Authorization": "Bearer sk-test"}
ANTHROPIC_AUTH = {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}


@pytest.fixture(scope="session")
def fake_server() -> Iterator[FakeUpstreamProcess]:
    with running_fake_upstream("fast") as fake:
        yield fake


@pytest.fixture
def fake(fake_server: FakeUpstreamProcess) -> FakeUpstreamProcess:
    fake_server.reset()
    return fake_server


@pytest.fixture
def client(fake: FakeUpstreamProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=fake.root_url, timeout=5.0) as http:
        yield http


def chat_body(text: str = "hello there", **extra: object) -> dict[str, object]:
    return {"model": "gpt-test", "messages": [{"role": "user", "content": text}], **extra}


def sse_events(response: httpx.Response) -> list[tuple[str, str]]:
    """(event name or '', data) for each event of a streamed response."""
    events, name = [], ""
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            events.append((name, line[len("data: ") :]))
            name = ""
    return events
