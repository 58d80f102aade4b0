"""The admission's line (redis/line.py) to a Redis Cluster (SWITCHYARD_REDIS_CLUSTER): one
line to each master, each command written on the line of the master that holds its first
key's slot.

An admission's scripts name keys of one workspace only, under its hash tag (redis/store.
slot_tag), so each script runs whole on one master. A pipeline of many requests' calls
splits into one write per master, written before any reply is awaited, and the replies are
put back in the calls' order. The slot map comes from CLUSTER SLOTS, asked of a known node
on first use and again after a MOVED reply (the slot has moved: the command did not run,
and goes once more, to the master the new map names) or a lost connection (a master that
failed over). What redis/line.py says of errors holds per master: a master that cannot be
reached fails the calls that needed it with an `OSError`. A slot in the middle of a
migration (ASK) and a cluster that is down answer errors, and the admission fails closed
as it does when Redis is away."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot
from redis.exceptions import ResponseError

from budgets.redis.line import Command, GivenUp, RedisLine

Address = tuple[str, int]


class ClusterLine:
    def __init__(self, url: str, *, timeout_s: float = 2.0, connect_timeout_s: float = 2.0):
        self.url = url
        self.timeout_s, self.connect_timeout_s = timeout_s, connect_timeout_s
        seed = urlsplit(url)
        self._known: list[Address] = [(seed.hostname or "localhost", seed.port or 6379)]
        self._lines: dict[Address, RedisLine] = {}
        self._owners: list[Address] | None = None  # slot -> its master

    async def call(
        self,
        commands: Sequence[Command],
        meanwhile: Callable[[], object] | None = None,
        given_up: GivenUp = None,
    ) -> list[Any]:
        """RedisLine.call's answer, the commands spread over the masters."""
        replies = await self._call_once(commands, meanwhile, given_up)
        moved = [i for i, reply in enumerate(replies) if _moved(reply)]
        if moved:  # (they did not run: sent again by the new map)
            self._owners = None
            again = await self._call_once([commands[i] for i in moved])
            for i, reply in zip(moved, again, strict=True):
                replies[i] = reply
        return replies

    async def close(self) -> None:
        for line in self._lines.values():
            await line.close()
        self._lines.clear()

    async def _call_once(
        self,
        commands: Sequence[Command],
        meanwhile: Callable[[], object] | None = None,
        given_up: GivenUp = None,
    ) -> list[Any]:
        if not commands:
            return []
        owners = self._owners or await self._map()
        groups: dict[Address, list[int]] = {}
        for i, command in enumerate(commands):
            groups.setdefault(owners[_slot(command)], []).append(i)
        try:
            # Connected first, then every write at once: no await lies between the writes,
            # so a caller cancelled meanwhile has written all of its commands or none.
            opened = [await self._line(address).connected() for address in groups]
        except OSError:
            self._owners = None
            raise
        parts = [
            line.send([commands[i] for i in indexes])
            for line, indexes in zip(opened, groups.values(), strict=True)
        ]
        if meanwhile is not None:
            meanwhile()
        done = _joined(parts, list(groups.values()), len(commands), given_up)
        try:
            return await done
        except OSError:
            self._owners = None
            raise

    def _line(self, address: Address) -> RedisLine:
        line = self._lines.get(address)
        if line is None:
            line = RedisLine(
                _node_url(self.url, address),
                timeout_s=self.timeout_s,
                connect_timeout_s=self.connect_timeout_s,
            )
            self._lines[address] = line
        return line

    async def _map(self) -> list[Address]:
        """Who holds each slot, asked of the first known node that answers."""
        failure: Exception = ConnectionError("no Redis Cluster node is known")
        for address in list(self._known):
            try:
                (reply,) = await self._line(address).call([("CLUSTER", "SLOTS")])
            except OSError as error:
                failure = error
                continue
            if isinstance(reply, ResponseError):
                raise ConnectionError(f"not a Redis Cluster node ({address}): {reply}")
            owners = _owners(reply, address)
            self._known = sorted(set(owners)) or self._known
            self._owners = owners
            return owners
        raise failure


def _joined(
    parts: Sequence[asyncio.Future[list[Any]]],
    indexes: Sequence[list[int]],
    count: int,
    given_up: GivenUp,
) -> asyncio.Future[list[Any]]:
    """One future of every part's replies, in the commands' order. A caller that gave up
    meanwhile cancels it, not the parts: once they are all in, `given_up` gets the whole."""
    joined: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
    pending = [len(parts)]

    def one_in(_part: asyncio.Future[list[Any]]) -> None:
        pending[0] -= 1
        if pending[0]:
            return
        failed = next((p.exception() for p in parts if p.exception() is not None), None)
        if failed is not None:
            if not joined.done():
                joined.set_exception(failed)
            return
        replies: list[Any] = [None] * count
        for part, places in zip(parts, indexes, strict=True):
            for place, reply in zip(places, part.result(), strict=True):
                replies[place] = reply
        if not joined.done():
            joined.set_result(replies)
        elif joined.cancelled() and given_up is not None:
            given_up(replies)

    for part in parts:
        part.add_done_callback(one_in)
    return joined


def _slot(command: Command) -> int:
    """The slot of a command's first key: EVALSHA's (EVALSHA sha numkeys key …), the only
    command the admission writes with keys; a keyless one goes to slot 0's master."""
    if str(command[0]).upper() in ("EVALSHA", "EVAL") and int(command[2]) > 0:
        key = command[3]
        return int(key_slot(key if isinstance(key, bytes) else str(key).encode()))
    return 0


def _owners(slots: Sequence[Any], asked: Address) -> list[Address]:
    """CLUSTER SLOTS' reply ([start, end, [host, port, id], replicas…] each) as a list of
    the master of every slot; a master announced without a host is the node asked."""
    owners: list[Address] = [asked] * REDIS_CLUSTER_HASH_SLOTS
    for start, end, master, *_replicas in slots:
        host = master[0].decode() if isinstance(master[0], bytes) else str(master[0])
        address = (host or asked[0], int(master[1]))
        owners[int(start) : int(end) + 1] = [address] * (int(end) - int(start) + 1)
    return owners


def _node_url(url: str, address: Address) -> str:
    """`url` (user, password, TLS) pointed at another node of the cluster."""
    parts = urlsplit(url)
    credentials = parts.netloc.rpartition("@")[0]
    netloc = f"{credentials}@" if credentials else ""
    return urlunsplit((parts.scheme, f"{netloc}{address[0]}:{address[1]}", "", parts.query, ""))


def _moved(reply: Any) -> bool:
    return isinstance(reply, ResponseError) and str(reply).startswith("MOVED ")
