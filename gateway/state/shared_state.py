"""Cooldowns (of endpoints, and of workspaces' BYOK credentials), session pins and tier pins
shared between gateway replicas through Redis (SPEC R-BEY-9, R-BEY-7). Per-node learning
(latency EWMA, in-flight counts, live metrics, a credential's recent failures) stays in
process, as GM keeps it; what a user would see as inconsistent between replicas is mirrored.

Reads never touch Redis: each store stays the in-process map the request path reads. A
store's `listener` hands every change to `SharedState`, which queues it (never blocking,
never raising) for a background writer: one key per entry with its absolute expiry (PXAT,
so Redis forgets lapsed state by itself) and one message on the channel. A background
reader applies what the other replicas publish through each store's `apply_remote` (which
tells no listener), and, after subscribing and again after every reconnect, loads the keys,
so a replica that starts or comes back catches up. One record serves as key value and
message; `until` is wall-clock epoch seconds, `node` lets a replica skip its own records:

    {"node": "9f…", "store": "cooldowns", "key": ENDPOINT, "value": REASON, "until": 1767225600.5}
    {"node": "9f…", "store": "credential_cooldowns", "key": "WS_ID:PROVIDER", "value": REASON, …}
    {"node": "9f…", "store": "pins:session", "key": "SESSION|MODEL", "value": ENDPOINT, "until": …}
    {"node": "9f…", "store": "tier_pins", "key": "ALIAS|SESSION", "value": "hard", "until": …}

stored under PREFIX:state:STORE:KEY and published on PREFIX:changes (PREFIX is
SWITCHYARD_SHARED_STATE_PREFIX, "switchyard" by default). On a Redis Cluster
(SWITCHYARD_REDIS_CLUSTER) the keys spread over the masters, the load scans each, and the
messages go one by one (a cluster pipeline cannot carry PUBLISH); any node relays them to
every subscriber.

The stores decide what is worth telling (routing/engine/affinity/keeping.py,
routing/engine/tiers/pins.py): new
values at once, a sliding expiry only when the others' copy is a minute off. Redis down or
slow costs the sharing, never a request: one warning per outage, a retry every `RETRY_S`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import orjson
import redis.asyncio as redis
from redis import Redis as SyncRedis
from redis import RedisCluster as SyncRedisCluster
from redis.exceptions import RedisError

from routing.engine.affinity.keeping import SessionPins
from routing.engine.cooldowns import Cooldowns
from routing.engine.tiers.pins import HARD, InProcessTierPins

log = logging.getLogger(__name__)

RETRY_S = 2.0  # between attempts to reach Redis while it is down
LOAD_WAIT_S = 1.0  # ASGI start-up waits at most this long for the first load
CONNECT_TIMEOUT_S = 1.0
COMMAND_TIMEOUT_S = 2.0
LISTEN_POLL_S = 5.0  # pub/sub read timeout; between reads redis-py runs its health checks
CLOSE_TIMEOUT_S = 1.0  # for a client or pub/sub connection to close (`_closed`)
MAX_QUEUED = 10_000  # changes waiting for Redis; past it the oldest are dropped (they expire)
BATCH = 500  # changes per pipeline round trip, keys per MGET on load
REDIS_ERRORS = (RedisError, OSError)  # OSError covers refused connections and timeouts

COOLDOWNS = "cooldowns"
CREDENTIAL_COOLDOWNS = "credential_cooldowns"  # a workspace's BYOK credential (R-BEY-7)
TIER_PINS = "tier_pins"
CONFIG = "config"  # a message only, never a key: "the configuration version moved"

Apply = Callable[[str, str, float], None]  # (key, value, until) into a local store
AnyRedis = redis.Redis | redis.RedisCluster


@dataclass(frozen=True, slots=True)
class Change:
    store: str
    key: str
    value: str
    until: float  # epoch seconds


class SharedState:
    def __init__(
        self, url: str, prefix: str, node_id: str | None = None, *, cluster: bool = False
    ) -> None:
        self.url = url
        self.prefix = prefix
        self.cluster = cluster
        self.channel = f"{prefix}:changes"
        self.node_id = node_id or uuid.uuid4().hex
        self._appliers: dict[str, Apply] = {}
        self._outbox: deque[Change] = deque(maxlen=MAX_QUEUED)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wakeup = asyncio.Event()
        self._loaded = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._down = False

    def share_cooldowns(self, store: Cooldowns) -> None:
        """The endpoints' cooldowns and, with them, the workspaces' credentials'."""
        store.listener = lambda endpoint, until, reason: self._send(
            COOLDOWNS, endpoint, reason, until
        )
        self._appliers[COOLDOWNS] = lambda endpoint, reason, until: store.apply_remote(
            endpoint, until, reason
        )
        credentials = store.credentials
        credentials.listener = lambda key, until, reason: self._send(
            CREDENTIAL_COOLDOWNS, key, reason, until
        )
        self._appliers[CREDENTIAL_COOLDOWNS] = lambda key, reason, until: credentials.apply_remote(
            key, until, reason
        )

    def share_session_pins(self, name: str, store: SessionPins) -> None:
        """`name` keeps this store's pins apart from another `SessionPins` instance's."""
        kind = f"pins:{name}"
        store.listener = lambda key, endpoint, until: self._send(kind, key, endpoint, until)
        self._appliers[kind] = store.apply_remote

    def on_config_change(self, changed: Callable[[], None]) -> None:
        """Call `changed` when a writer says the configuration changed (a deploy, a revoked
        key: `announce_config_change`), so this replica checks its snapshot at once instead
        of at its next poll."""
        self._appliers[CONFIG] = lambda _key, _value, _until: changed()

    def share_tier_pins(self, store: InProcessTierPins) -> None:
        store.listener = lambda key, until: self._send(TIER_PINS, key, HARD, until)
        self._appliers[TIER_PINS] = lambda key, _value, until: store.apply_remote(key, until)

    @property
    def running(self) -> bool:
        return any(not task.done() for task in self._tasks)

    def start_soon(self) -> bool:
        """Start the writer and the reader in the running event loop without waiting for
        the first load (first use, when no ASGI lifespan started them); False outside one."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        if not self.running:  # never started, or its event loop has gone (tests)
            self._loop = loop
            self._wakeup, self._loaded = asyncio.Event(), asyncio.Event()
            connect: Callable[..., AnyRedis] = (
                redis.RedisCluster.from_url if self.cluster else redis.from_url
            )
            client = connect(
                self.url,
                socket_connect_timeout=CONNECT_TIMEOUT_S,
                socket_timeout=COMMAND_TIMEOUT_S,
                health_check_interval=30,
            )
            self._tasks = [
                loop.create_task(self._write_forever(client), name="shared-state-writer"),
                loop.create_task(self._read_forever(client), name="shared-state-reader"),
            ]
            self._wakeup.set()  # changes queued before the start
        return True

    async def start(self, wait_s: float = LOAD_WAIT_S) -> None:
        """Start (ASGI lifespan) and give the first load up to `wait_s`, so that a replica
        answers its first request knowing the others' cooldowns and pins."""
        self.start_soon()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._loaded.wait(), wait_s)

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)  # the reader closes the client

    def close(self) -> None:
        """Synchronous teardown (runtime.reset): cancel the tasks without awaiting them."""
        if self._loop is not None and not self._loop.is_closed():
            for task in self._tasks:
                task.cancel()
        self._tasks = []

    def _send(self, store: str, key: str, value: str, until: float) -> None:
        """Queue one change for the writer (a store's listener: never blocks or raises)."""
        self._outbox.append(Change(store, key, value, until))
        loop = self._loop
        if loop is None or loop.is_closed():
            return  # not started yet: the writer sends it once it starts
        try:
            in_loop = asyncio.get_running_loop() is loop
        except RuntimeError:
            in_loop = False
        if in_loop:
            self._wakeup.set()
        else:  # a sync view's thread
            loop.call_soon_threadsafe(self._wakeup.set)

    async def _write_forever(self, client: AnyRedis) -> None:
        while True:
            if not self._outbox:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            batch = [self._outbox.popleft() for _ in range(min(BATCH, len(self._outbox)))]
            while not await self._write(client, batch):
                await asyncio.sleep(RETRY_S)

    async def _write(self, client: AnyRedis, batch: list[Change]) -> bool:
        """Store and publish the changes that have not lapsed; False while Redis is down."""
        now = time.time()
        records = [(change, self._record(change)) for change in batch if change.until > now]
        try:
            async with client.pipeline(transaction=False) as pipe:
                for change, record in records:
                    key = f"{self.prefix}:state:{change.store}:{change.key}"
                    pipe.set(key, record, pxat=int(change.until * 1000))
                    if not self.cluster:
                        pipe.publish(self.channel, record)
                await pipe.execute()
            if self.cluster:
                for _, record in records:
                    await client.publish(self.channel, record)
        except REDIS_ERRORS as error:
            self._went_down(error)
            return False
        except Exception:  # a bug here must not end the sharing for good
            log.exception("shared state: dropping %d changes that could not be written", len(batch))
        self._came_back()
        return True

    async def _read_forever(self, client: AnyRedis) -> None:
        try:
            await self._read(client)
        finally:  # also when the loop ends without stop() (asyncio.run cancels its tasks)
            await _closed(client.aclose())

    async def _read(self, client: AnyRedis) -> None:
        while True:
            pubsub = client.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self.channel)
                await self._load(client)  # after subscribing: no change falls in between
                self._came_back()
                self._loaded.set()
                while True:
                    message = await pubsub.get_message(
                        ignore_subscribe_messages=True, timeout=LISTEN_POLL_S
                    )
                    if message is not None:
                        self._apply(message["data"])
            except REDIS_ERRORS as error:
                self._went_down(error)
            except Exception:  # a bug here must not end the sharing for good
                log.exception("shared state: the reader failed; restarting it")
            finally:
                await _closed(pubsub.aclose())
            self._loaded.set()  # start-up does not wait for a Redis that is down
            await asyncio.sleep(RETRY_S)

    async def _load(self, client: AnyRedis) -> None:
        keys = [key async for key in client.scan_iter(match=f"{self.prefix}:state:*", count=1000)]
        for start in range(0, len(keys), BATCH):
            some = keys[start : start + BATCH]
            found = await (client.mget_nonatomic(some) if self.cluster else client.mget(some))
            for raw in found:
                if raw is not None:
                    self._apply(raw)

    def _record(self, change: Change) -> bytes:
        return orjson.dumps(
            {
                "node": self.node_id,
                "store": change.store,
                "key": change.key,
                "value": change.value,
                "until": change.until,
            }
        )

    def _apply(self, raw: bytes) -> None:
        """Apply another replica's record; this node's own are skipped, also on a reload
        (its local state is newer than what it wrote, or is still queued)."""
        try:
            record = orjson.loads(raw)
            if record["node"] == self.node_id:
                return
            apply = self._appliers.get(record["store"])
            if apply is not None:
                apply(str(record["key"]), str(record["value"]), float(record["until"]))
        except (ValueError, KeyError, TypeError):
            log.warning("shared state: ignoring a malformed record on %s", self.channel)

    def _went_down(self, error: Exception) -> None:
        if not self._down:
            self._down = True
            log.warning(
                "shared state: Redis unreachable (%s); cooldowns and pins stay local to this "
                "replica until it is back, retrying every %.0f s",
                error,
                RETRY_S,
            )

    def _came_back(self) -> None:
        if self._down:
            self._down = False
            log.info("shared state: Redis reachable again; sharing cooldowns and pins")


def announce_config_change(url: str, prefix: str, *, cluster: bool = False) -> None:
    """Tell every replica, now, that the configuration version moved (synchronous: the
    writer is a management command or a management API view). The replicas' readers
    check their snapshot's version stamp at once; Redis down, they notice at their next
    poll (SWITCHYARD_SNAPSHOT_POLL_S) as without Redis."""
    record = orjson.dumps(
        {
            "node": "writer",
            "store": CONFIG,
            "key": "version",
            "value": "",
            "until": time.time() + 60,
        }
    )
    try:
        _announcer(url, cluster).publish(f"{prefix}:changes", record)
    except REDIS_ERRORS as error:
        log.warning("could not announce a configuration change on Redis (%s)", error)


@functools.cache
def _announcer(url: str, cluster: bool) -> SyncRedis | SyncRedisCluster:
    """One pooled client per process: an `apply` saving many rows announces each."""
    connect = SyncRedisCluster.from_url if cluster else SyncRedis.from_url
    return connect(url, socket_connect_timeout=CONNECT_TIMEOUT_S, socket_timeout=COMMAND_TIMEOUT_S)


async def _closed(closing: Awaitable[object]) -> None:
    """Await a redis-py close for at most CLOSE_TIMEOUT_S. Closing a pub/sub connection
    can wait for its socket forever (redis/redis-py#3941), and the reader closes while
    its task is cancelled, when the event loop ends: unbounded, that end never came."""
    with contextlib.suppress(TimeoutError, *REDIS_ERRORS):
        await asyncio.wait_for(closing, CLOSE_TIMEOUT_S)
