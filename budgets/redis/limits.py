"""Rate limits shared by every replica through Redis (SPEC R-LIM-1, R-BEY-9): the semantics
of limits.py, each acquire one Lua script, so every scope and kind of a request is checked
and taken atomically, all or nothing, whatever the other replicas do at the same moment.

The scripts read Redis's clock (`TIME`), not the caller's `now`, so replicas with skewed
clocks agree. Keys, under PREFIX (SWITCHYARD_SHARED_STATE_PREFIX's "switchyard" by default)
and the hash tag TAG of the scope's workspace (`{w5}`, redis/store.py's slot_tag):

    PREFIX:TAG:limit:SCOPE:requests|tokens  hash {level, at}: a GCRA bucket
                                            (limits.RateState), expiring once drained empty
    PREFIX:TAG:limit:SCOPE:concurrent       sorted set lease -> expiry (epoch ms); expired
                                            leases are dropped before counting
    PREFIX:TAG:lease:LEASE                  an admitted request not yet released (once only)

Unreachable, slow or failing Redis raises `LimitStoreUnavailable`: never an admission
nobody counted (fail closed; the caller answers 503 `budget_store_unavailable`). All keys
of one request are one workspace's, under its tag: on a Redis Cluster each script runs on
the one master that holds that workspace's slot."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.commands.core import AsyncScript
from redis.exceptions import RedisError

from budgets.redis.store import AnyRedis, shared_client, slot_tag
from budgets.rules.limits import (
    LEVEL_SLACK,
    CheckResult,
    Kind,
    LimitSpec,
    LimitStoreUnavailable,
    LimitUse,
    LimitVerdict,
    PlannedCheck,
    plan_checks,
    use_of,
    verdict,
)
from budgets.stores.limit_store import LEASE_TTL_S

DEFAULT_PREFIX = "switchyard"
REDIS_ERRORS = (RedisError, OSError)  # OSError: refused connections and socket timeouts
KEY_GRACE_MS = 1000  # keys outlive what they hold by a second, never by less

# Lua numbers go back to Redis as integers unless formatted; %.17g round-trips a double.
_COMMON_LUA = """
local function fmt(x) return string.format('%.17g', x) end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local function drained(key, limit)
  local state = redis.call('HMGET', key, 'level', 'at')
  if not state[1] then return 0 end
  local elapsed = math.max(now - tonumber(state[2]), 0)
  return math.max(tonumber(state[1]) - elapsed * limit / 60, 0)
end
local function store(key, level, limit)
  if level <= 0 then redis.call('DEL', key) return end
  redis.call('HSET', key, 'level', fmt(level), 'at', fmt(now))
  redis.call('PEXPIRE', key, math.ceil(level * 60000 / limit) + GRACE_MS)
end
"""

# KEYS: the lease key, then one per check. ARGV: lease, lease ttl (ms), then per check its
# kind, limit and cost. Reply: all-admitted flag, then per check its flag and level before.
ACQUIRE_LUA = (
    (
        _COMMON_LUA
        + """
local lease, ttl_ms = ARGV[1], tonumber(ARGV[2])
local n = #KEYS - 1
local before, passes, all, held = {}, {}, true, false
for i = 1, n do
  local key, kind = KEYS[i + 1], ARGV[3 * i]
  -- only tokens, leases and an allowance's requests (allowance.py) have anything to give back
  held = held or kind ~= 'requests' or tonumber(ARGV[3 * i + 2]) > 1
  local limit, cost = tonumber(ARGV[3 * i + 1]), tonumber(ARGV[3 * i + 2])
  if kind == 'concurrent' then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now * 1000)
    before[i] = redis.call('ZCARD', key)
    passes[i] = before[i] < limit
  else
    before[i] = drained(key, limit)
    passes[i] = limit > 0 and before[i] + cost <= limit + LEVEL_SLACK
  end
  all = all and passes[i]
end
if all then
  for i = 1, n do
    local key, kind = KEYS[i + 1], ARGV[3 * i]
    local limit, cost = tonumber(ARGV[3 * i + 1]), tonumber(ARGV[3 * i + 2])
    if kind == 'concurrent' then
      redis.call('ZADD', key, now * 1000 + ttl_ms, lease)
      if redis.call('PTTL', key) < ttl_ms + GRACE_MS then
        redis.call('PEXPIRE', key, ttl_ms + GRACE_MS)
      end
    else
      store(key, before[i] + cost, limit)
    end
  end
  if held then redis.call('SET', KEYS[1], '1', 'PX', ttl_ms) end
end
local reply = {all and 1 or 0}
for i = 1, n do
  reply[#reply + 1] = passes[i] and 1 or 0
  reply[#reply + 1] = fmt(before[i])
end
return reply
"""
    )
    .replace("GRACE_MS", str(KEY_GRACE_MS))
    .replace("LEVEL_SLACK", repr(LEVEL_SLACK))
)

# KEYS: the lease key, then one per token or concurrency check. ARGV: lease, tokens used
# minus reserved, then per check its kind and limit. Reply: 1 if released now, else 0.
RELEASE_LUA = (
    (
        _COMMON_LUA
        + """
if redis.call('DEL', KEYS[1]) == 0 then return 0 end
local lease, delta = ARGV[1], tonumber(ARGV[2])
for i = 2, #KEYS do
  local kind, limit = ARGV[2 * i - 1], tonumber(ARGV[2 * i])
  if kind == 'concurrent' then
    redis.call('ZREM', KEYS[i], lease)
  else
    store(KEYS[i], math.max(drained(KEYS[i], limit) + delta, 0), limit)
  end
end
return 1
"""
    )
    .replace("GRACE_MS", str(KEY_GRACE_MS))
    .replace("LEVEL_SLACK", repr(LEVEL_SLACK))
)

# KEYS: one per check. ARGV: per check its kind and limit. Reply: per check what is in use
# (a drained level, or the live leases). Reads only: expired leases are not counted, not
# removed, so reading never changes what the next acquire sees.
USAGE_LUA = (
    _COMMON_LUA
    + """
local reply = {}
for i = 1, #KEYS do
  local kind, limit = ARGV[2 * i - 1], tonumber(ARGV[2 * i])
  if kind == 'concurrent' then
    reply[i] = fmt(redis.call('ZCOUNT', KEYS[i], '(' .. fmt(now * 1000), '+inf'))
  else
    reply[i] = fmt(drained(KEYS[i], limit))
  end
end
return reply
"""
).replace("GRACE_MS", str(KEY_GRACE_MS))


class RedisLimiter:
    """The LimitStore replicas share. `now` is accepted for the protocol and ignored."""

    def __init__(
        self, client: AnyRedis, *, prefix: str = DEFAULT_PREFIX, lease_ttl_s: float = LEASE_TTL_S
    ) -> None:
        self.client = client
        self.prefix = prefix
        self.lease_ttl_ms = int(lease_ttl_s * 1000)
        # register_script: EVALSHA, loading the script on NOSCRIPT (a restarted Redis).
        self._acquire: AsyncScript = client.register_script(ACQUIRE_LUA)
        self._release: AsyncScript = client.register_script(RELEASE_LUA)
        self._usage: AsyncScript = client.register_script(USAGE_LUA)

    @classmethod
    def from_url(
        cls, url: str, *, prefix: str = DEFAULT_PREFIX, lease_ttl_s: float = LEASE_TTL_S
    ) -> RedisLimiter:
        # The workers' own bounded pool (redis/store.py's shared_pool), so a burst of acquires
        # shares a few connections as it does in a gateway, instead of opening one each at
        # once: on a loaded machine those connects timed out.
        return cls(shared_client(url), prefix=prefix, lease_ttl_s=lease_ttl_s)

    async def aclose(self) -> None:
        await self.client.aclose()

    async def acquire(
        self, specs: Sequence[LimitSpec], *, tokens: int, lease: str, now: float
    ) -> LimitVerdict:
        call, planned = self.acquire_call(specs, tokens=tokens, lease=lease)
        try:
            reply = await self._acquire(keys=call[0], args=call[1])
        except REDIS_ERRORS as error:
            raise LimitStoreUnavailable(f"rate-limit store unreachable: {error}") from error
        return acquired(reply, planned)

    def acquire_call(
        self, specs: Sequence[LimitSpec], *, tokens: int, lease: str, requests: int = 1
    ) -> tuple[tuple[list[str], list[str | int]], list[PlannedCheck]]:
        """The acquire script's (keys, args), and the checks its reply answers, for a
        caller that sends it in a pipeline with other commands (budgets/redis/calls.py);
        `requests` > 1 takes a worker's allowance (allowance.py)."""
        planned = plan_checks(specs, tokens=tokens, requests=requests)
        keys = [self._lease_key(lease, specs)] + [self._key(p.scope, p.kind) for p in planned]
        args: list[str | int] = [lease, self.lease_ttl_ms]
        for one in planned:
            args += [one.kind.value, one.limit, one.cost]
        return (keys, args), planned

    async def release(
        self,
        specs: Sequence[LimitSpec],
        *,
        lease: str,
        tokens_reserved: int,
        tokens_used: int,
        now: float,
    ) -> None:
        keys, args = self.release_call(
            specs, lease=lease, tokens_reserved=tokens_reserved, tokens_used=tokens_used
        )
        try:
            await self._release(keys=keys, args=args)
        except REDIS_ERRORS as error:
            raise LimitStoreUnavailable(f"rate-limit store unreachable: {error}") from error

    def release_call(
        self, specs: Sequence[LimitSpec], *, lease: str, tokens_reserved: int, tokens_used: int
    ) -> tuple[list[str], list[str | int]]:
        """The release script's (keys, args); only the lease key when there is nothing to
        give back (requests-per-minute limits alone), and the call can be skipped."""
        keys = [self._lease_key(lease, specs)]
        args: list[str | int] = [lease, tokens_used - tokens_reserved]
        for spec in specs:
            if spec.tokens_per_minute:  # not None, nor 0 (nothing to settle against)
                keys.append(self._key(spec.scope, Kind.TOKENS))
                args += [Kind.TOKENS.value, spec.tokens_per_minute]
            if spec.concurrent is not None:
                keys.append(self._key(spec.scope, Kind.CONCURRENT))
                args += [Kind.CONCURRENT.value, spec.concurrent]
        return keys, args

    def return_call(
        self, specs: Sequence[LimitSpec], *, lease: str, unused: int
    ) -> tuple[list[str], list[str | int]]:
        """The release script's (keys, args) that give back the `unused` requests of an
        allowance taken under `lease` (allowance.py)."""
        keys = [self._lease_key(lease, specs)]
        args: list[str | int] = [lease, -unused]
        for spec in specs:
            if spec.requests_per_minute is not None:
                keys.append(self._key(spec.scope, Kind.REQUESTS))
                args += [Kind.REQUESTS.value, spec.requests_per_minute]
        return keys, args

    async def usage(self, specs: Sequence[LimitSpec], *, now: float) -> list[LimitUse]:
        planned = plan_checks(specs, tokens=0)
        if not planned:
            return []
        keys = [self._key(one.scope, one.kind) for one in planned]
        args: list[str | int] = []
        for one in planned:
            args += [one.kind.value, one.limit]
        try:
            reply = await self._usage(keys=keys, args=args)
        except REDIS_ERRORS as error:
            raise LimitStoreUnavailable(f"rate-limit store unreachable: {error}") from error
        return [use_of(one, float(used)) for one, used in zip(planned, reply, strict=True)]

    @property
    def scripts(self) -> tuple[AsyncScript, AsyncScript]:
        """(acquire, release), to run in a caller's pipeline."""
        return self._acquire, self._release

    def _key(self, scope: str, kind: Kind) -> str:
        return f"{self.prefix}:{slot_tag(scope)}:limit:{scope}:{kind.value}"

    def _lease_key(self, lease: str, specs: Sequence[LimitSpec]) -> str:
        """Under the tag of the limits' workspace (one request's limits are one
        workspace's), so the lease lies in their slot."""
        tag = slot_tag(specs[0].scope) if specs else "{lease}"
        return f"{self.prefix}:{tag}:lease:{lease}"


def acquired(reply: Sequence[Any], planned: Sequence[PlannedCheck]) -> LimitVerdict:
    """The verdict of an acquire script's reply."""
    results = [
        CheckResult(one, bool(int(reply[1 + 2 * i])), float(reply[2 + 2 * i]))
        for i, one in enumerate(planned)
    ]
    return verdict(results)
