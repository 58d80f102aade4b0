"""The admitter's round trips (budgets/redis/pipeline.py): one redis-py pipeline a call, its
replies in order with error replies in their place; the caller's work done meanwhile; the
replies of a caller that left handed to `given_up`; a Redis away or silent failing the
call (the admission then refuses, 503). A Redis in a thread here plays one that is slow
or silent; the real one with REDIS_URL."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import hiredis
import pytest
import redis.asyncio as redis
from redis.exceptions import NoScriptError

from budgets.redis import pipeline
from budgets.redis.store import REDIS_ERRORS, shared_pool
from fakeupstream.process import free_port


def _client(url: str) -> redis.Redis:
    """The worker's client on one Redis (store.py `shared_client`)."""
    return redis.Redis(connection_pool=shared_pool(url))


def _real() -> redis.Redis:
    if not os.environ.get("REDIS_URL"):
        pytest.skip("needs REDIS_URL")
    return _client(os.environ["REDIS_URL"])


class ThreadedRedis:
    """Answers redis-py's handshake and PING; an ECHO once `answer(word)` returns. It
    runs in a thread, so it reads and answers while the caller's event loop is busy."""

    def __init__(self, answer: Callable[[bytes], bool]) -> None:
        self.answer = answer
        self.echoes = threading.Event()  # an ECHO was read
        self.server = socket.create_server(("127.0.0.1", 0))
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.server.getsockname()[1]}/0"

    def _serve(self) -> None:
        connection, _ = self.server.accept()
        parser = hiredis.Reader()
        with connection:
            while data := connection.recv(65536):
                parser.feed(data)
                while (command := parser.gets()) is not False:
                    connection.sendall(self._reply(command))

    def _reply(self, command: list[bytes]) -> bytes:
        name = command[0].upper()
        if name == b"HELLO":
            return b"%1\r\n$5\r\nproto\r\n:3\r\n"
        if name == b"PING":
            return b"+PONG\r\n"
        if name != b"ECHO":
            return b"+OK\r\n"
        self.echoes.set()
        if not self.answer(command[1]):
            threading.Event().wait(3600)  # silent
        return b"$%d\r\n%b\r\n" % (len(command[1]), command[1])


def test_replies_come_in_order_with_error_replies_in_their_place() -> None:
    async def scenario() -> list[Any]:
        client = _real()
        commands = [
            ("EVAL", "return {'ok', 1, ARGV[1]}", 0, "two"),
            ("EVALSHA", "0" * 40, 0),  # a script Redis does not hold
            ("EVAL", "return ARGV[1]", 0, "three"),
        ]
        replies = await pipeline.send(client, commands)
        assert await pipeline.send(client, []) == []
        await client.aclose()
        return replies

    ok, missing, last = asyncio.run(scenario())
    assert ok == [b"ok", 1, b"two"]
    assert isinstance(missing, NoScriptError)
    assert last == b"three"


def test_meanwhile_runs_once_redis_has_the_commands_and_before_their_replies() -> None:
    done, replied = threading.Event(), threading.Event()

    def answer(word: bytes) -> bool:
        if word == b"hello":
            done.wait(2)  # until the caller's work is done (or 2 s have passed)
        replied.set()
        return True

    fake = ThreadedRedis(answer)
    seen: list[tuple[bool, bool]] = []

    def meanwhile() -> None:
        seen.append((fake.echoes.wait(2), replied.is_set()))
        done.set()

    async def scenario() -> list[Any]:
        client = _client(fake.url)
        await client.ping()  # (the connection open, as a worker's is)
        replies = await pipeline.send(client, [("ECHO", "hello")], meanwhile)
        await client.aclose()
        return replies

    # when a call has work of its own to do while Redis answers
    # then the work ran once Redis had read the command, before its reply came
    assert asyncio.run(scenario()) == [b"hello"]
    assert seen == [(True, False)]


def test_a_caller_that_leaves_hands_its_replies_to_given_up() -> None:
    release = threading.Event()
    fake = ThreadedRedis(lambda word: release.wait(5))  # answers once released

    async def scenario() -> list[list[Any]]:
        client = _client(fake.url)
        await client.ping()  # (the connection open, as a worker's is)
        handed: list[list[Any]] = []
        call = asyncio.ensure_future(
            pipeline.send(client, [("ECHO", "a"), ("ECHO", "b")], given_up=handed.append)
        )
        # when its caller is cancelled once Redis has read the commands, before any reply
        await asyncio.to_thread(fake.echoes.wait, 5)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        release.set()
        # then the replies, when they come, go to `given_up`
        for _ in range(200):
            if handed:
                break
            await asyncio.sleep(0.01)
        await client.aclose()
        return handed

    assert asyncio.run(scenario()) == [[b"a", b"b"]]


def test_a_redis_away_fails_the_call_at_once() -> None:
    async def scenario() -> None:
        client = _client(f"redis://127.0.0.1:{free_port()}")  # nothing listens
        started = time.monotonic()
        with pytest.raises(REDIS_ERRORS):
            await pipeline.send(client, [("ECHO", "a")])
        assert time.monotonic() - started < 1
        await client.aclose()

    asyncio.run(scenario())


def test_a_redis_that_sends_nothing_fails_the_call_in_two_seconds() -> None:
    fake = ThreadedRedis(lambda word: word != b"hang")

    async def scenario() -> None:
        client = _client(fake.url)
        assert await pipeline.send(client, [("ECHO", "a")]) == [b"a"]
        started = time.monotonic()
        # when Redis reads a call's commands and then sends nothing
        with pytest.raises(REDIS_ERRORS):
            await pipeline.send(client, [("ECHO", "hang")])
        # then the call fails once the pool's socket timeout (2 s) has passed
        assert 2 <= time.monotonic() - started < 3
        await client.aclose()

    asyncio.run(scenario())
