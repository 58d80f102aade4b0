"""The budget store in Redis, shared by every replica (SPEC R-BEY-9).

One Lua script reserves across all of a request's counters atomically (Redis runs a
script alone): it checks `spent + reserved + amount ≤ cap` on each and only then adds
`amount` to each `reserved`, and records the open reservation (a hash) in a sorted set by
expiry, for the sweeper. A second script settles it — once: a reservation no longer open
(settled, or swept: charged whole) changes nothing. A counter Redis does not hold (a new
period, or Redis lost its data) makes the reserve script answer `missing`; the store then
rebuilds it from the ledger (SET if still absent) and tries again. Counters expire a day
after their period ends. Redis unreachable or failing raises `BudgetStoreUnavailable`:
the request is refused, never admitted unchecked.

A Redis flush forgets the reservations open at that moment: until those requests end, the
budget may be overspent by at most their reserved amounts (docs/budgets.md). Their
settlements still reach the counters and the ledger; the sweeper cannot charge them. A
settlement made while Redis cannot be reached still reaches the ledger
(`settled_unreachable`).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

import redis.asyncio as redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.commands.core import AsyncScript
from redis.exceptions import RedisError

from budgets.redis.single_flight import SingleFlight
from budgets.rules.budgets import Charge, tightest
from budgets.rules.holds import BudgetStoreUnavailable, CounterState, Hold, Settled, Verdict
from budgets.stores.budget_store import ledger_entries, period_end
from budgets.stores.ledger import Ledger

AnyRedis = redis.Redis | redis.RedisCluster

# Keys, each under its workspace's hash tag (`{w5}`, `slot_tag`), so that every key one
# script touches lies in one Redis Cluster slot and workspaces spread over the masters:
# `{prefix}:{w5}:budget:{counter}` (a hash: spent, reserved, requests), `…:budget:open` (a
# sorted set: request id -> expiry), `…:budget:res:{id}` (an open reservation) and
# `…:budget:done:{id}` (settled or swept: kept until DONE_KEEP_S after the reservation's
# expiry, by when no settlement of it can still come — a request settles by its deadline, and
# the reservation outlives that by a minute; kept a day, one a budgeted request, they held
# ~8.6 M keys at 100 requests/s). The prefix is the installation's
# SWITCHYARD_SHARED_STATE_PREFIX. The scripts name every key they touch in KEYS.
KEEP_AFTER_PERIOD_S = 86_400
DONE_KEEP_S = 3_600
SWEEP_BATCH = 200
MAX_REBUILDS = 3  # a counter missing again right after it was rebuilt: Redis is flapping
REDIS_ERRORS = (RedisError, OSError)
POOL_CONNECTIONS = 64  # per worker; calls take well under a millisecond each
# For a free connection, before the store counts as unavailable. This wait measures this
# process's own queue, not Redis: a Redis that is away frees each connection within its
# 2 s socket timeouts. Under a 200-request burst on a loaded machine every connection is
# in use for as long as the starved event loop takes to read its reply, and a 2 s wait
# turned some budget refusals (402) into 503s.
POOL_WAIT_S = 10.0

# KEYS: the open set, the reservation, then the counters; ARGV: amount, request id,
# expiry, reservation (JSON), then per counter its cap and its expiry time (epoch seconds).
# -> {"missing", i...} | {"refused", i, used...} | {"ok", used...} (i: a counter's place
# among the counters; used: spent + reserved of each, after reserving when ok).
RESERVE = """
local amount = tonumber(ARGV[1])
local n = #KEYS - 2
local missing, states = {}, {}
for i = 1, n do
  local key = KEYS[i + 2]
  states[i] = redis.call('HMGET', key, 'spent', 'reserved')  -- one call a counter
  if not states[i][1] and redis.call('EXISTS', key) == 0 then
    missing[#missing + 1] = i
  end
end
if #missing > 0 then return {'missing', unpack(missing)} end
local used = {}
local refused = 0
for i = 1, n do
  used[i] = tonumber(states[i][1] or '0') + tonumber(states[i][2] or '0')
  if refused == 0 and used[i] + amount > tonumber(ARGV[3 + 2 * i]) then refused = i end
end
if refused > 0 then return {'refused', refused, unpack(used)} end
for i = 1, n do
  local key = KEYS[i + 2]
  redis.call('HINCRBY', key, 'reserved', amount)
  redis.call('HINCRBY', key, 'requests', 1)  -- counted when admitted (route rate nodes)
  redis.call('EXPIREAT', key, ARGV[4 + 2 * i])
  used[i] = used[i] + amount
end
redis.call('SET', KEYS[2], ARGV[4])
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
return {'ok', unpack(used)}
"""

# KEYS: the open set, the reservation, its `done` marker, then the counters; ARGV: amount,
# cost, request id, "sweep" when the sweeper calls ("cancel": the reservation goes back
# unspent and uncounted, a request refused by its rate limits), until when (epoch seconds)
# the `done` marker is kept, and how many requests the reservation was for (an
# allowance's, allowance.py; 1 if absent). -> {} when there is nothing to settle, else each
# counter's spent after (-1: Redis lost it). A reservation no longer open was settled or
# swept (its `done` marker says so) — or forgotten by a flush, when its cost still counts
# though its reservation is gone. A counter a flush took is left absent: made here, it
# would hold this cost alone and never be rebuilt; the next reservation rebuilds it from
# the ledger, this cost's row included.
SETTLE = """
local reserved_delta = tonumber(ARGV[1])
local requests = tonumber(ARGV[6] or '1')
if redis.call('ZREM', KEYS[1], ARGV[3]) == 0 then
  if ARGV[4] == 'sweep' or redis.call('EXISTS', KEYS[3]) == 1 then return {} end
  reserved_delta = 0
else
  redis.call('DEL', KEYS[2])
end
redis.call('SET', KEYS[3], 1, 'EXAT', ARGV[5])
if ARGV[4] == 'cancel' then  -- given back unused: the request was never admitted
  for i = 4, #KEYS do
    if redis.call('EXISTS', KEYS[i]) == 1 then
      if redis.call('HINCRBY', KEYS[i], 'reserved', -reserved_delta) < 0 then
        redis.call('HSET', KEYS[i], 'reserved', 0)
      end
      redis.call('HINCRBY', KEYS[i], 'requests', -1)
    end
  end
  return {}
end
local after = {}
for i = 4, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 0 then
    after[i - 3] = -1
  else
    if reserved_delta > 0 then
      local reserved = redis.call('HINCRBY', KEYS[i], 'reserved', -reserved_delta)
      if reserved < 0 then redis.call('HSET', KEYS[i], 'reserved', 0) end
    end
    after[i - 3] = redis.call('HINCRBY', KEYS[i], 'spent', ARGV[2])
    -- a reservation a flush forgot: the rebuilt counter does not count its request yet
    if reserved_delta == 0 then
      redis.call('HINCRBY', KEYS[i], 'requests', requests)
    elseif requests ~= 1 then  -- an allowance counted one request when it was reserved
      redis.call('HINCRBY', KEYS[i], 'requests', requests - 1)
    end
  end
end
return after
"""

# KEYS: counters; ARGV: per counter spent, requests, expiry. Only counters still absent.
REBUILD = """
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 0 then
    redis.call('HSET', KEYS[i], 'spent', ARGV[3 * i - 2], 'reserved', 0,
               'requests', ARGV[3 * i - 1])
    redis.call('EXPIREAT', KEYS[i], ARGV[3 * i])
  end
end
return 1
"""


def shared_pool(url: str) -> redis.BlockingConnectionPool:
    """One bounded pool per worker for the budget and limit scripts, where a call waits its
    turn for a connection: a burst of admissions shares a few connections (each call takes
    well under a millisecond) instead of opening one each at once — which, on a loaded
    machine, timed out connecting and refused requests — or meeting redis-py's "Too many
    connections"."""
    return redis.BlockingConnectionPool.from_url(
        url,
        max_connections=POOL_CONNECTIONS,
        timeout=POOL_WAIT_S,
        socket_connect_timeout=2,
        socket_timeout=2,
        health_check_interval=30,
    )


def shared_client(url: str, *, cluster: bool = False) -> AnyRedis:
    """The worker's client for the admission's scripts and reads: on a Redis Cluster
    (SWITCHYARD_REDIS_CLUSTER) redis-py's cluster client, which finds every master from
    the one node `url` names and sends each command to its key's master; a pool per
    master, connections opened as calls need them."""
    if cluster:
        # One retry, at once: enough to follow a failover's new topology, and a master
        # that does not answer fails its calls within a few seconds (closed), not after
        # redis-py's default ten attempts with backoff.
        return redis.RedisCluster.from_url(
            url,
            socket_connect_timeout=2,
            socket_timeout=2,
            health_check_interval=30,
            retry=Retry(NoBackoff(), 1),
        )
    return redis.Redis(connection_pool=shared_pool(url))


def workspace_tag(workspace_id: int) -> str:
    """The hash tag of a workspace's keys: Redis Cluster puts every key with the same tag
    in one slot, so a script may touch them all, and spreads workspaces over masters."""
    return f"{{w{workspace_id}}}"


def slot_tag(name: str) -> str:
    """The hash tag of a budget counter's or a limit scope's keys: its workspace's
    (`ws:5:…` and `key:5:…`, budgets.py, name workspace 5)."""
    parts = name.split(":", 2)
    return f"{{w{parts[1]}}}" if len(parts) > 1 else f"{{{name}}}"


class RedisBudgetStore:
    def __init__(self, client: AnyRedis, ledger: Ledger, prefix: str) -> None:
        self.client, self.ledger, self.prefix = client, ledger, prefix
        self._reserve = client.register_script(RESERVE)
        self._settle = client.register_script(SETTLE)
        self._rebuild = client.register_script(REBUILD)
        self._rebuilds = SingleFlight(self._rebuild_now)

    @classmethod
    def from_url(
        cls, url: str, ledger: Ledger, prefix: str, *, cluster: bool = False
    ) -> RedisBudgetStore:
        return cls(shared_client(url, cluster=cluster), ledger, prefix)

    def counter_key(self, counter: str) -> str:
        return f"{self.prefix}:{slot_tag(counter)}:budget:{counter}"

    def hold_keys(self, workspace_id: int, request_id: str) -> list[str]:
        """The open set, the reservation and its `done` marker of a workspace's request."""
        base = f"{self.prefix}:{workspace_tag(workspace_id)}:budget:"
        return [base + "open", f"{base}res:{request_id}", f"{base}done:{request_id}"]

    async def reserve(self, hold: Hold) -> Verdict:
        keys, args = self.reserve_call(hold)
        for _ in range(MAX_REBUILDS):
            verdict = await self.reserved(hold, await self._call(self._reserve, keys, args))
            if verdict is not None:
                return verdict
        raise BudgetStoreUnavailable("budget counters keep disappearing from Redis")

    def reserve_call(self, hold: Hold) -> tuple[list[str], list[Any]]:
        """The reserve script's (keys, args), for a caller that pipelines it."""
        keys = self.hold_keys(hold.workspace_id, hold.request_id)[:2]
        keys += [self.counter_key(c.counter) for c in hold.charges]
        names = [c.counter for c in hold.charges]
        record = json.dumps(
            {"counters": names, "workspace": hold.workspace_id, "amount": hold.amount_micros}
        )
        args: list[Any] = [hold.amount_micros, hold.request_id, hold.expires_at, record]
        for charge in hold.charges:
            args += [charge.cap_micros, int(charge.reset_at) + KEEP_AFTER_PERIOD_S]
        return keys, args

    @staticmethod
    def reserves(reply: Sequence[Any]) -> bool:
        """Did the reserve script whose reply this is open the reservation?"""
        return _text(reply[0]) == "ok"

    async def reserved(self, hold: Hold, reply: Sequence[Any]) -> Verdict | None:
        """The verdict of a reserve script's reply; None when counters were missing — they
        are rebuilt from the ledger, and the script must run again."""
        status = _text(reply[0])
        if status == "missing":
            await self._rebuild_counters([hold.charges[int(i) - 1] for i in reply[1:]])
            return None
        used = [int(u) for u in reply[2 if status == "refused" else 1 :]]
        remaining = tightest(hold.charges, used)
        if status == "refused":
            return Verdict(False, remaining, hold.charges[int(reply[1]) - 1])
        return Verdict(True, remaining)

    async def settle(self, hold: Hold, cost_micros: int, now: float) -> Settled | None:
        keys, args = self.settle_call(hold, cost_micros)
        return self.settled(hold, cost_micros, now, await self._call(self._settle, keys, args))

    def cancel_call(self, hold: Hold) -> tuple[list[str], list[Any]]:
        """The settle script's (keys, args) that give a reservation back unspent: its
        request was refused after all (by its rate limits)."""
        return self._settle_keys(hold), [
            hold.amount_micros,
            0,
            hold.request_id,
            "cancel",
            _done_until(hold),
        ]

    def settle_call(
        self, hold: Hold, cost_micros: int, requests: int = 1
    ) -> tuple[list[str], list[Any]]:
        """`requests`: how many requests `hold` reserved for (an allowance's, allowance.py)."""
        args = [hold.amount_micros, cost_micros, hold.request_id, "", _done_until(hold)]
        return self._settle_keys(hold), args + [requests] if requests != 1 else args

    def _settle_keys(self, hold: Hold) -> list[str]:
        keys = self.hold_keys(hold.workspace_id, hold.request_id)
        return keys + [self.counter_key(c.counter) for c in hold.charges]

    def settled(
        self, hold: Hold, cost_micros: int, now: float, after: Sequence[Any], requests: int = 1
    ) -> Settled | None:
        """A settle script's reply, recorded in the ledger."""
        if not after:
            return None  # settled already, or swept (charged whole, in the ledger)
        self.ledger.record(ledger_entries(hold, cost_micros, "settled", now, requests))
        names = [c.counter for c in hold.charges]
        spent = dict(zip(names, (int(a) for a in after), strict=True))
        # (a counter Redis lost reads -1 on both sides: no alert threshold lies between)
        before = {n: spent[n] - cost_micros if spent[n] >= 0 else -1 for n in names}
        return Settled(before, spent)

    def settled_unreachable(
        self, hold: Hold, cost_micros: int, now: float, requests: int = 1
    ) -> None:
        """A settlement Redis could not be told: its cost goes in the ledger all the same.
        A Redis that comes back empty (a restart) rebuilds the counters from the ledger,
        this cost included; without the row the spending would be lost with the open
        reservation. A Redis that kept the reservation charges it in full when it expires
        (the sweeper): its counter then holds the worst case until the period ends, while
        the ledger keeps this row, the first for the request and counter."""
        self.ledger.record(ledger_entries(hold, cost_micros, "settled", now, requests))

    @property
    def scripts(self) -> tuple[AsyncScript, AsyncScript]:
        """(reserve, settle), to run in a caller's pipeline."""
        return self._reserve, self._settle

    async def read(self, counters: Sequence[str]) -> dict[str, CounterState]:
        try:
            async with self.client.pipeline(transaction=False) as pipe:
                for name in counters:
                    pipe.hmget(self.counter_key(name), "spent", "reserved", "requests")
                replies = await pipe.execute()
        except REDIS_ERRORS as error:
            raise BudgetStoreUnavailable(str(error)) from error
        found = {}
        absent = [n for n, r in zip(counters, replies, strict=True) if r[0] is None]
        totals = await self.ledger.totals(absent) if absent else {}
        for name, (spent, reserved, requests) in zip(counters, replies, strict=True):
            if spent is None:
                total = totals.get(name, (0, 0))
                found[name] = CounterState(total[0], 0, total[1])
            else:
                found[name] = CounterState(int(spent), int(reserved or 0), int(requests or 0))
        return found

    async def sweep(self, now: float, workspace_ids: Collection[int]) -> list[Hold]:
        """Charge the whole amount of reservations past their expiry (their process died):
        those of `workspace_ids`, each workspace's open set on the master that holds it."""
        ids = list(workspace_ids)
        try:
            async with self.client.pipeline(transaction=False) as pipe:
                for workspace_id in ids:
                    open_set = self.hold_keys(workspace_id, "")[0]
                    pipe.zrangebyscore(open_set, "-inf", now, start=0, num=SWEEP_BATCH)
                found = zip(ids, await pipe.execute(), strict=True)
                expired = [(ws, _text(rid)) for ws, rids in found for rid in rids]
            async with self.client.pipeline(transaction=False) as pipe:
                for workspace_id, rid in expired:
                    pipe.get(self.hold_keys(workspace_id, rid)[1])
                records = await pipe.execute() if expired else []
        except REDIS_ERRORS as error:
            raise BudgetStoreUnavailable(str(error)) from error
        swept = []
        for (_, rid), raw in zip(expired, records, strict=True):
            if raw is None:
                continue
            data = json.loads(raw)
            charges = tuple(Charge(name, 0, 0.0, ()) for name in data["counters"])
            hold = Hold(rid, data["workspace"], charges, data["amount"], now)
            if await self._call(
                self._settle,
                self._settle_keys(hold),
                [
                    hold.amount_micros,
                    hold.amount_micros,
                    hold.request_id,
                    "sweep",
                    _done_until(hold),
                ],
            ):
                self.ledger.record(ledger_entries(hold, hold.amount_micros, "expired", now))
                swept.append(hold)
        if swept:
            await self.ledger.flush()  # rare, and what it charged must outlive this process
        return swept

    async def _rebuild_counters(self, charges: Sequence[Charge]) -> None:
        await self._rebuilds.run([c.counter for c in charges])

    async def _rebuild_now(self, counters: list[str]) -> None:
        """Counters still absent are SET from the ledger (another replica may have won)."""
        totals = await self.ledger.totals(counters)
        args: list[Any] = []
        for name in counters:
            spent, requests = totals.get(name, (0, 0))
            args += [spent, requests, int(period_end(name)) + KEEP_AFTER_PERIOD_S]
        await self._call(self._rebuild, [self.counter_key(name) for name in counters], args)

    async def _call(self, script: Any, keys: list[str], args: list[Any]) -> Any:
        try:
            return await script(keys=keys, args=args)
        except REDIS_ERRORS as error:
            raise BudgetStoreUnavailable(str(error)) from error


def _done_until(hold: Hold) -> int:
    """When the `done` marker of `hold` may go (a swept hold expires at the sweep)."""
    return int(hold.expires_at) + DONE_KEEP_S


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
