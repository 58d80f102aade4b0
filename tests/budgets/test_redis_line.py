"""The admissions' own connection to Redis (budgets/redis/line.py): calls from
any number of requests share it, each getting its own replies, in order; a Redis that fails
or does not answer fails the calls waiting (the admission then refuses, 503) and the next
call connects again. A small server here plays Redis; the real one with REDIS_URL."""

from __future__ import annotations

import asyncio
import inspect
import os
import socket
import threading
import time
from collections.abc import Awaitable, Callable

import hiredis
import pytest
import uvloop
from redis.exceptions import ResponseError

from budgets.redis.line import RedisLine, pack
from tests.waiting import until

Answer = Callable[[list[bytes]], Awaitable[bytes | None]]  # None: say nothing


@pytest.fixture(params=["asyncio", "uvloop"])
def run(request: pytest.FixtureRequest) -> Callable[[Awaitable[object]], object]:
    """Each test on both event loops the servers use (uvloop's transports differ)."""
    factory = uvloop.new_event_loop if request.param == "uvloop" else None

    def run_on(main: Awaitable[object]) -> object:
        with asyncio.Runner(loop_factory=factory) as runner:
            return runner.run(main)  # type: ignore[arg-type]

    return run_on


def test_commands_are_packed_as_resp_arrays_of_bulk_strings() -> None:
    packed = pack([("EVALSHA", b"ab", 1, "k\u00e9y", 2.5), ("PING",)])
    assert packed == (b"*5\r\n$7\r\nEVALSHA\r\n$2\r\nab\r\n$1\r\n1\r\n$4\r\nk\xc3\xa9y\r\n"
                      b"$3\r\n2.5\r\n*1\r\n$4\r\nPING\r\n")  # fmt: skip


class FakeRedis:
    """Reads commands, records them per connection, and answers as `answer` says."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.connections: list[list[list[bytes]]] = []
        self.writers: list[asyncio.StreamWriter] = []

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *exc: object) -> None:
        self.drop()

    def drop(self, *, listening: bool = False) -> None:
        """Close every connection (a Redis restarting), and stop listening (one that died)."""
        if not listening:
            self.server.close()
        for writer in self.writers:
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received: list[list[bytes]] = []
        self.connections.append(received)
        self.writers.append(writer)
        parser = hiredis.Reader()
        while data := await reader.read(65536):  # (until the connection closes)
            parser.feed(data)
            while (command := parser.gets()) is not False:
                received.append(command)
                reply = await self.answer(command)
                if reply is not None:
                    writer.write(reply)
        writer.close()


async def _echo(command: list[bytes]) -> bytes:
    return b"$%d\r\n%b\r\n" % (len(command[-1]), command[-1])


def test_concurrent_calls_each_get_their_own_replies_in_order(run) -> None:
    async def scenario() -> None:
        async with FakeRedis(_echo) as address:
            line = RedisLine(f"redis://{address}/0")
            # when fifty requests call at once, two commands each
            replies = await asyncio.gather(
                *(line.call([("ECHO", f"a{i}"), ("ECHO", f"b{i}")]) for i in range(50))
            )
            await line.close()
        # then each got its own two replies, on one connection
        assert replies == [[f"a{i}".encode(), f"b{i}".encode()] for i in range(50)]

    run(scenario())


def test_a_call_with_nothing_to_send_answers_at_once_and_shifts_no_replies(run) -> None:
    async def scenario() -> list[list[object]]:
        async with FakeRedis(_echo) as address:
            line = RedisLine(f"redis://{address}/0")
            # (a settlement with nothing to give back: a requests-per-minute limit alone)
            replies = await asyncio.gather(line.call([]), line.call([("ECHO", "next")]))
            await line.close()
            return replies

    assert run(scenario()) == [[], [b"next"]]


def test_a_cancelled_call_does_not_shift_the_replies_of_the_next(run) -> None:
    async def scenario() -> None:
        answering = asyncio.Event()  # Redis answers once the test has set it

        async def held(command: list[bytes]) -> bytes:
            await answering.wait()
            return await _echo(command)

        fake = FakeRedis(held)
        async with fake as address:
            line = RedisLine(f"redis://{address}/0")
            # when a request gives up while its call is under way
            first = asyncio.ensure_future(line.call([("ECHO", "first")]))
            await until(lambda: fake.connections and fake.connections[0], "the first call read")
            first.cancel()
            # then the next call, written behind it, still gets its own reply, not the
            # abandoned one's
            second = asyncio.ensure_future(line.call([("ECHO", "second")]))
            await until(lambda: len(line._open.waiting) == 2, "the second call written")
            answering.set()
            assert await second == [b"second"]
            await line.close()

    run(scenario())


def test_an_error_reply_comes_back_in_its_place(run) -> None:
    async def scenario() -> None:
        async def refuse_evalsha(command: list[bytes]) -> bytes:
            if command[0] == b"EVALSHA":
                return b"-NOSCRIPT No matching script\r\n"
            return await _echo(command)

        async with FakeRedis(refuse_evalsha) as address:
            line = RedisLine(f"redis://{address}/0")
            replies = await line.call([("ECHO", "x"), ("EVALSHA", "0" * 40, 0), ("ECHO", "y")])
            await line.close()
        assert replies[0] == b"x"
        assert replies[2] == b"y"
        assert isinstance(replies[1], ResponseError)
        assert str(replies[1]).startswith("NOSCRIPT")

    run(scenario())


def test_it_logs_in_and_selects_the_database_of_its_url_first(run) -> None:
    async def scenario() -> list[list[list[bytes]]]:
        async def ok(command: list[bytes]) -> bytes:
            return b"+OK\r\n" if command[0] in (b"AUTH", b"SELECT") else await _echo(command)

        fake = FakeRedis(ok)
        async with fake as address:
            line = RedisLine(f"redis://bench:s3cret@{address}/3")
            assert await line.call([("ECHO", "hi")]) == [b"hi"]
            await line.close()
        return fake.connections

    [commands] = run(scenario())
    assert commands == [[b"AUTH", b"bench", b"s3cret"], [b"SELECT", b"3"], [b"ECHO", b"hi"]]


def test_a_refused_login_fails_the_call_and_the_next_call_tries_again(run) -> None:
    async def scenario() -> None:
        async def refuse(command: list[bytes]) -> bytes:
            return b"-WRONGPASS invalid username-password pair\r\n"

        fake = FakeRedis(refuse)
        async with fake as address:
            line = RedisLine(f"redis://:wrong@{address}/0")
            for _ in range(2):
                with pytest.raises(ConnectionError, match="WRONGPASS"):
                    await line.call([("ECHO", "hi")])
        assert len(fake.connections) == 2

    run(scenario())


def test_a_redis_that_does_not_answer_fails_the_calls_waiting_then_the_next_is_served(run) -> None:
    async def scenario() -> None:
        answering = False

        async def mute_then_echo(command: list[bytes]) -> bytes | None:
            return await _echo(command) if answering else None

        fake = FakeRedis(mute_then_echo)
        async with fake as address:
            line = RedisLine(f"redis://{address}/0", timeout_s=0.2)
            # when Redis hangs, both calls waiting fail in time, as an OSError
            started = asyncio.get_running_loop().time()
            waiting = [line.call([("ECHO", "a")]), line.call([("ECHO", "b")])]
            failures = await asyncio.gather(*waiting, return_exceptions=True)
            took = asyncio.get_running_loop().time() - started
            assert all(isinstance(f, TimeoutError) for f in failures), failures
            assert 0.2 <= took < 1.0
            # and once it answers again, the next call connects anew and is served
            answering = True
            assert await line.call([("ECHO", "c")]) == [b"c"]
            await line.close()
        assert len(fake.connections) == 2

    run(scenario())


def test_a_long_queue_behind_replies_that_keep_coming_does_not_time_out(run) -> None:
    async def scenario() -> list[list[bytes]]:
        loop = asyncio.get_running_loop()
        started = loop.time()
        answered = 0

        async def steady(command: list[bytes]) -> bytes:
            # Redis answers in turn, one reply every 0.04 s of the loop's clock, the last
            # after 0.4 s: what is under test is a timeout on that clock, so its time
            # passes for real
            nonlocal answered
            due = started + 0.04 * (answered + 1)
            await until(lambda: loop.time() >= due, f"reply {answered}'s turn", interval_s=0.005)
            answered += 1
            return await _echo(command)

        async with FakeRedis(steady) as address:
            line = RedisLine(f"redis://{address}/0", timeout_s=0.2)
            # when a burst queues more behind each other than Redis answers in the timeout
            replies = await asyncio.gather(*(line.call([("ECHO", f"{i}")]) for i in range(10)))
            # (its last call waited past the timeout)
            assert loop.time() - started > 0.2
            await line.close()
            return replies

    # then none fails: Redis was never silent, the queue was the burst's own
    assert run(scenario()) == [[f"{i}".encode()] for i in range(10)]


def test_a_reply_that_came_in_time_counts_though_the_loop_was_too_busy_to_read_it(run) -> None:
    async def scenario() -> list[bytes]:
        async with FakeRedis(_echo) as address:
            line = RedisLine(f"redis://{address}/0", timeout_s=0.2)
            await line.call([("ECHO", "warm")])
            # when the worker's own loop is stuck longer than the timeout right after
            # sending (a burst, a long collection), Redis answering as soon as it runs again
            call = asyncio.ensure_future(line.call([("ECHO", "late")]))
            # (polled every turn: the loop stalls in the very turn the call was written)
            await until(lambda: line._open.waiting, "the call written", interval_s=0)
            _stall_the_loop(0.3)
            # then the call gets its answer: the stall was not Redis's (the timer that finds
            # it late runs before the loop reads the socket, on uvloop even when it has come)
            replies = await call
            await line.close()
            return replies

    assert run(scenario()) == [b"late"]


def test_a_connection_made_in_time_counts_though_the_loop_was_too_busy_to_see_it(run) -> None:
    async def scenario() -> list[bytes]:
        async with FakeRedis(_echo) as address:
            line = RedisLine(f"redis://{address}/0", timeout_s=0.2, connect_timeout_s=0.2)
            # when the worker's loop is stuck past the connect timeout right after its
            # first call started connecting (a first burst)
            call = asyncio.ensure_future(line.call([("ECHO", "first")]))
            # (polled every turn: the loop stalls in the very turn the socket started
            # connecting, in the third: the call, its attempt, the socket)
            await until(_connecting, "the connection attempt under way", interval_s=0)
            _stall_the_loop(0.3)
            # then the call is served: the kernel made the connection in time
            replies = await call
            await line.close()
            return replies

    assert run(scenario()) == [b"first"]


def _stall_the_loop(seconds: float) -> None:
    """Hold the event loop (a burst, a long collection) for `seconds`: it blocks on
    purpose, for a loop stuck past the line's timeouts is what those tests are about."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def _connecting() -> bool:
    """A connection attempt of the line has started: its socket is connecting."""
    return any(
        task.get_coro().__qualname__ == "RedisLine._open_connection"
        and inspect.getcoroutinestate(task.get_coro()) == inspect.CORO_SUSPENDED
        for task in asyncio.all_tasks()
    )


def test_a_connection_redis_closes_fails_its_calls_and_the_next_reconnects(run) -> None:
    async def scenario() -> None:
        async def restart_on_b(command: list[bytes]) -> bytes | None:
            if command[-1] == b"b":
                fake.drop(listening=True)
                return None
            return await _echo(command)

        fake = FakeRedis(restart_on_b)
        async with fake as address:
            line = RedisLine(f"redis://{address}/0")
            assert await line.call([("ECHO", "a")]) == [b"a"]
            # when Redis closes the connection with a call under way, it fails, never hangs
            with pytest.raises(OSError):
                await asyncio.wait_for(line.call([("ECHO", "b")]), timeout=5)
            # and the next call connects again
            assert await line.call([("ECHO", "c")]) == [b"c"]
            await line.close()
            fake.drop()
            # and with Redis gone for good, a call fails at once (connection refused)
            with pytest.raises(OSError):
                await asyncio.wait_for(line.call([("ECHO", "d")]), timeout=5)
        assert len(fake.connections) == 2

    run(scenario())


def test_on_a_real_redis_scripts_run_and_replies_keep_their_types(run) -> None:
    if not os.environ.get("REDIS_URL"):
        pytest.skip("needs REDIS_URL")

    async def scenario() -> list[object]:
        line = RedisLine(os.environ["REDIS_URL"])
        replies = await line.call([("EVAL", "return {'ok', 1, ARGV[1]}", 0, "two"),
                                   ("EVAL", "return redis.error_reply('NO')", 0)])  # fmt: skip
        await line.close()
        return replies

    ok, error = run(scenario())
    assert ok == [b"ok", 1, b"two"]
    assert isinstance(error, ResponseError)


def test_meanwhile_runs_once_the_commands_are_written_before_their_replies_come(run) -> None:
    # A Redis in a thread of its own: it reads while the caller's loop is held up, and
    # answers once the caller's work is done (or 2 s have passed).
    server = socket.create_server(("127.0.0.1", 0))
    read, done, replied = threading.Event(), threading.Event(), threading.Event()

    def serve() -> None:
        connection, _ = server.accept()
        with connection:
            data = b""
            while b"hello" not in data:
                data += connection.recv(65536)
            read.set()
            done.wait(2)
            connection.sendall(b"$5\r\nhello\r\n")
            replied.set()
            connection.recv(1)  # (until the line closes)

    threading.Thread(target=serve, daemon=True).start()
    seen: list[tuple[bool, bool]] = []

    def meanwhile() -> None:
        seen.append((read.wait(2), replied.is_set()))
        done.set()

    async def scenario() -> object:
        line = RedisLine(f"redis://127.0.0.1:{server.getsockname()[1]}/0")
        # when a call has work of its own to do while Redis answers
        reply = await line.call([("ECHO", "hello")], meanwhile=meanwhile)
        await line.close()
        return reply

    try:
        # then the work ran once Redis had read the command, before its reply came
        assert run(scenario()) == [b"hello"]
        assert seen == [(True, False)]
    finally:
        server.close()
