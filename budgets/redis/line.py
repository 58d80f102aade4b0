"""One connection to Redis that all of a worker's admissions share (redis/admitter.py).

Redis answers a connection's commands in the order it read them, so the calls of any
number of requests can be written on one connection as they come, each call's future
resolved when its replies are next in line: no connection to borrow from a pool, no task
or timer a call, one write and one wake-up a round trip. redis-py's pipeline spent
~450 µs of the worker's CPU a round trip on this machine (encoding each argument, the
pool, a timeout per read, its observability hooks) — with the settlement, ~1.4 ms a
budgeted request, the budget issue's whole c1 cost; this line, ~150 µs.

What the admission sends is narrow (EVALSHA of its scripts), so this speaks just enough
RESP2 to send commands, packed by hiredis, and leaves the replies to hiredis's parser, the
one redis-py uses.
Error replies come back as `ResponseError` instances, in their place (like redis-py's
`execute(raise_on_error=False)`). A connection that fails, closes, or over which Redis
sends nothing for `timeout_s` while calls wait fails every call waiting on it with an
`OSError` (ConnectionError, TimeoutError); the next call connects again. The URL is REDIS_URL's:
`redis://`, `rediss://` (TLS; `?ssl_cert_reqs=none` skips verification) and `unix://`,
with a user, a password and a database number.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import hiredis
from redis.asyncio.connection import SSLConnection, parse_url
from redis.exceptions import ResponseError

Command = Sequence[bytes | str | int | float]
RECHECK_S = 0.05  # a silence's second look, once the loop has read its sockets


def pack(commands: Sequence[Command]) -> bytes:
    """Commands in RESP2, ready for one write: hiredis's packer (C; a third of the time
    of packing them in Python, ~9 µs for an admission's two scripts here)."""
    return b"".join([hiredis.pack_command(tuple(command)) for command in commands])


# Gets the replies of a call whose caller was cancelled once its commands were written.
GivenUp = Callable[[list[Any]], None] | None


class _Replies(asyncio.Protocol):
    """A connection's reader: each reply goes to the oldest call still waiting for one."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.parser = hiredis.Reader(replyError=ResponseError)
        # (replies expected, replies so far, its future, when it was sent, its `given_up`)
        self.waiting: deque[tuple[int, list[Any], asyncio.Future[list[Any]], float, GivenUp]] = (
            deque()
        )
        self.transport: asyncio.Transport | None = None
        self.lost: Exception | None = None
        self._watch: asyncio.TimerHandle | None = None
        self._heard_at = 0.0  # when Redis last sent anything (loop time)
        self._suspect = False  # silent at the last check

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # (uvloop's is not a subclass)

    def send(
        self, commands: Sequence[Command], given_up: GivenUp = None
    ) -> asyncio.Future[list[Any]]:
        assert self.transport is not None
        loop = asyncio.get_running_loop()
        replies: asyncio.Future[list[Any]] = loop.create_future()
        self.waiting.append((len(commands), [], replies, loop.time(), given_up))
        self.transport.write(pack(commands))
        if self._watch is None:
            self._watch = loop.call_later(self.timeout_s, self._check)
        return replies

    def data_received(self, data: bytes) -> None:
        self._heard_at = asyncio.get_running_loop().time()
        self.parser.feed(data)
        while (reply := self.parser.gets()) is not False:
            if not self.waiting:  # nothing asked for this: the stream is out of step
                self._fail(ConnectionError("Redis sent a reply nobody asked for"))
                return
            expected, got, replies, _, given_up = self.waiting[0]
            got.append(reply)
            if len(got) == expected:
                self.waiting.popleft()
                if not replies.done():
                    replies.set_result(got)
                elif replies.cancelled() and given_up is not None:  # its request gave up
                    # (soon, not here: whatever it raises must not stop this connection's reads)
                    asyncio.get_running_loop().call_soon(given_up, got)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(exc or ConnectionError("Redis closed the connection"))

    def _check(self) -> None:
        """One timer for the whole line. It fails the calls waiting when Redis has sent
        nothing for `timeout_s` since the oldest was written: Redis answers in order, so
        while replies keep coming it is alive, however many calls a burst queued behind
        them (measured per call, a 200-request burst on one worker failed the tail of its
        own queue). It looks a second time before failing them, once the loop has read
        its sockets: a loop stalled past the timeout runs its due timers before its reads
        (uvloop), or the reply it was about to read."""
        self._watch = None
        if not self.waiting:
            self._suspect = False
            return
        loop = asyncio.get_running_loop()
        silent_since = max(self.waiting[0][3], self._heard_at)
        late_at = silent_since + self.timeout_s
        if loop.time() < late_at:
            self._suspect = False
            self._watch = loop.call_at(late_at, self._check)
        elif not self._suspect:
            self._suspect = True
            self._watch = loop.call_later(RECHECK_S, self._check)
        else:
            self._fail(TimeoutError(f"Redis sent nothing for {self.timeout_s:g} s"))

    def _fail(self, error: Exception) -> None:
        if self.lost is None:
            self.lost = error if isinstance(error, OSError) else ConnectionError(str(error))
        if self.transport is not None:
            self.transport.abort()
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        while self.waiting:
            replies = self.waiting.popleft()[2]
            if not replies.done():
                replies.set_exception(self.lost)


class RedisLine:
    def __init__(self, url: str, *, timeout_s: float = 2.0, connect_timeout_s: float = 2.0):
        self.options = parse_url(url)
        self.timeout_s, self.connect_timeout_s = timeout_s, connect_timeout_s
        self._open: _Replies | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._connecting: asyncio.Task[_Replies] | None = None

    async def call(
        self,
        commands: Sequence[Command],
        meanwhile: Callable[[], object] | None = None,
        given_up: GivenUp = None,
    ) -> list[Any]:
        """Each command's reply, in order, an error reply as a `ResponseError` in its place.
        Raises OSError when Redis cannot be reached or does not answer in time.
        `meanwhile` runs once the commands are written, before their replies are awaited:
        the caller's own work, done while Redis answers. `given_up` gets the replies of a
        call cancelled after its commands were written: what they did, undone."""
        if not commands:  # (nothing to wait for: a reply would never come to resolve it)
            return []
        replies = (await self.connected()).send(commands, given_up)
        if meanwhile is not None:
            meanwhile()
        return await replies

    async def connected(self) -> _Replies:
        """The open connection, connecting first when there is none: its `send` writes
        commands at once and gives the future of their replies (call's first half, for a
        caller writing on several lines before it waits: cluster_line.py)."""
        line = self._open
        if line is None or line.lost is not None or self._loop is not asyncio.get_running_loop():
            line = await self._connected()
        return line

    async def close(self) -> None:
        if self._open is not None and self._open.transport is not None:
            self._open.transport.close()
        self._open = None

    async def _connected(self) -> _Replies:
        """A new connection: one attempt, shared by the calls that found none meanwhile."""
        loop = asyncio.get_running_loop()
        if self._connecting is None or self._loop is not loop:
            self._loop = loop
            self._connecting = loop.create_task(self._connect())
            self._connecting.add_done_callback(self._attempted)
        return await asyncio.shield(self._connecting)

    def _attempted(self, attempt: asyncio.Task[_Replies]) -> None:
        if self._connecting is attempt:
            self._connecting = None
        if not attempt.cancelled() and attempt.exception() is None:  # (retrieved, if any)
            self._open = attempt.result()

    async def _connect(self) -> _Replies:
        """A connection within `connect_timeout_s` — looked at a second time, once the loop
        has read its sockets, as a silence is: a worker's first burst can stall its loop
        past the timeout, and every call of the burst waits on this one attempt."""
        attempt = asyncio.ensure_future(self._open_connection())
        try:
            done, _ = await asyncio.wait({attempt}, timeout=self.connect_timeout_s)
            if not done:
                done, _ = await asyncio.wait({attempt}, timeout=RECHECK_S)
            if not done:
                raise TimeoutError(f"no connection to Redis in {self.connect_timeout_s:g} s")
            return attempt.result()
        except ResponseError as refused:
            raise ConnectionError(f"Redis refused the connection: {refused}") from refused
        finally:
            attempt.cancel()  # (a no-op once it is done)

    async def _open_connection(self) -> _Replies:
        opts, loop = self.options, asyncio.get_running_loop()
        timeout_s = self.timeout_s

        def protocol() -> _Replies:
            return _Replies(timeout_s)

        if "path" in opts:
            _, line = await loop.create_unix_connection(protocol, opts["path"])
        else:
            tls = _tls(opts) if opts.get("connection_class") is SSLConnection else None
            _, line = await loop.create_connection(
                protocol, opts.get("host", "localhost"), opts.get("port", 6379), ssl=tls
            )
        hello: list[Command] = []
        if opts.get("password"):
            user = [opts["username"]] if opts.get("username") else []
            hello.append(["AUTH", *user, opts["password"]])
        if opts.get("db"):
            hello.append(["SELECT", opts["db"]])
        if hello:
            for reply in await line.send(hello):
                if isinstance(reply, ResponseError):
                    line.transport.close()  # type: ignore[union-attr]
                    raise reply
        return line


def _tls(opts: Mapping[str, Any]) -> ssl.SSLContext:
    context = ssl.create_default_context()
    if opts.get("ssl_cert_reqs") in ("none", ssl.CERT_NONE):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context
