"""Rate limits shared between replicas through Redis (SPEC R-LIM-1, R-BEY-9): two
`RedisLimiter`s with a client each stand for two gateway replicas. Each test works under a
key prefix of its own and deletes it after. Without REDIS_URL (the SQLite run of CI) they
are skipped; the fail-closed test needs no Redis and always runs."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Awaitable, Callable

import pytest
import redis.asyncio as redis

from budgets.redis.limits import RedisLimiter
from budgets.rules.limits import LimitSpec, LimitStoreUnavailable
from tests.waiting import until

needs_redis = pytest.mark.skipif(
    not os.environ.get("REDIS_URL"), reason="shared rate limits need REDIS_URL"
)


def _run(test: Callable[[str], Awaitable[None]]) -> None:
    """Run `test(prefix)` in a fresh event loop, then delete everything under the prefix."""
    prefix = f"switchyard-test-limits-{uuid.uuid4().hex[:12]}"

    async def run_and_clean() -> None:
        try:
            await test(prefix)
        finally:
            client = redis.Redis.from_url(os.environ["REDIS_URL"])
            keys = [key async for key in client.scan_iter(match=f"{prefix}:*")]
            if keys:
                await client.delete(*keys)
            await client.aclose()

    asyncio.run(run_and_clean())


def _replica(prefix: str, **kwargs: float) -> RedisLimiter:
    return RedisLimiter.from_url(os.environ["REDIS_URL"], prefix=prefix, **kwargs)


@needs_redis
def test_r_lim_1_r_bey_9_two_replicas_admit_exactly_60_of_100_concurrent_acquires():
    async def test(prefix: str) -> None:
        # given two replicas, each with its own client, and a 60-per-minute workspace
        a, b = _replica(prefix), _replica(prefix)
        spec = [LimitSpec("ws:12", requests_per_minute=60)]
        await asyncio.gather(a.client.ping(), b.client.ping())  # connect before the race
        # when 100 requests race, half through each, with clocks a day apart
        started = time.monotonic()
        verdicts = await asyncio.gather(*(
            (a if i % 2 else b).acquire(spec, tokens=0, lease=f"r{i}", now=i % 2 * 86_400.0)
            for i in range(100)
        ))  # fmt: skip
        # then 60, and one more for each whole second the race took: the bucket drains one
        # request a second by Redis's clock (on a loaded CI machine the race took over 1 s)
        drained = int(time.monotonic() - started)
        assert 60 <= sum(v.admitted for v in verdicts) <= 60 + drained
        assert {v.retry_after_s for v in verdicts if not v.admitted} == {1}
        await a.aclose()
        await b.aclose()

    _run(test)


@needs_redis
def test_r_lim_1_retry_after_is_the_wait_until_the_request_fits():
    async def test(prefix: str) -> None:
        # given 6 requests per minute (one per 10 s) and 1000 tokens, used by replica A
        a, b = _replica(prefix), _replica(prefix)
        spec = [LimitSpec("key:34", requests_per_minute=6, tokens_per_minute=1000)]
        for i in range(6):
            assert (await a.acquire(spec, tokens=10, lease=f"r{i}", now=0)).admitted
        # when replica B asks
        refused = await b.acquire(spec, tokens=10, lease="late", now=0)
        # then it waits for one request to drain
        assert (refused.admitted, refused.refused) == (False, "key:34/requests")
        assert refused.headers["Retry-After"] == "10"
        assert refused.headers["x-ratelimit-remaining-requests"] == "0"
        assert refused.headers["x-ratelimit-remaining-tokens"] == "940"
        # and a token refusal waits for its tokens: 1140 of 1000 is 140 at 1000/min
        tokens_spec = [LimitSpec("ws:12", tokens_per_minute=1000)]
        assert (await a.acquire(tokens_spec, tokens=800, lease="t1", now=0)).admitted
        refused = await b.acquire(tokens_spec, tokens=340, lease="t2", now=0)
        assert (refused.retry_after_s, refused.refused) == (9, "ws:12/tokens")
        await a.aclose()
        await b.aclose()

    _run(test)


@needs_redis
def test_r_lim_1_release_refunds_unused_tokens_once_across_replicas():
    async def test(prefix: str) -> None:
        a, b = _replica(prefix), _replica(prefix)
        spec = [LimitSpec("ws:12", tokens_per_minute=1000)]
        assert (await a.acquire(spec, tokens=900, lease="a", now=0)).admitted
        # when released twice, on A and on B (two exit paths)
        await a.release(spec, lease="a", tokens_reserved=900, tokens_used=100, now=0)
        await b.release(spec, lease="a", tokens_reserved=900, tokens_used=100, now=0)
        # then 800 came back once
        verdict = await b.acquire(spec, tokens=800, lease="b", now=0)
        assert verdict.admitted
        assert int(verdict.headers["x-ratelimit-remaining-tokens"]) in (100, 101)  # drained
        await a.aclose()
        await b.aclose()

    _run(test)


@needs_redis
def test_r_lim_1_a_killed_holders_concurrency_lease_expires():
    async def test(prefix: str) -> None:
        # given replica A takes the key's one slot and dies without releasing
        a, b = _replica(prefix, lease_ttl_s=0.5), _replica(prefix, lease_ttl_s=0.5)
        spec = [LimitSpec("key:34", concurrent=1)]
        taken_at = time.monotonic()
        assert (await a.acquire(spec, tokens=0, lease="dead", now=0)).admitted
        await a.aclose()
        # then B is refused until the lease expires, and admitted after (the scripts read
        # Redis's clock, not `now`: the lease's half second passes for real; a refusal
        # takes nothing, so B asks until it is admitted)
        refused = await b.acquire(spec, tokens=0, lease="b1", now=0)
        assert (refused.admitted, refused.refused) == (False, "key:34/concurrent")

        async def admitted() -> bool:
            return (await b.acquire(spec, tokens=0, lease="b2", now=0)).admitted

        await until(admitted, "B admitted once the dead holder's lease expired", interval_s=0.05)
        # at ~0.5 s on Redis's clock: not before, and by the lease's own expiry, not its
        # key's (a second later)
        assert 0.4 <= time.monotonic() - taken_at < 1.4
        await b.release(spec, lease="b2", tokens_reserved=0, tokens_used=0, now=0)
        assert (await b.acquire(spec, tokens=0, lease="b3", now=0)).admitted
        await b.aclose()

    _run(test)


@needs_redis
def test_r_lim_1_one_refusing_scope_takes_nothing_anywhere():
    async def test(prefix: str) -> None:
        # given the key's one request used
        a = _replica(prefix)
        key = LimitSpec("key:34", requests_per_minute=1)
        ws = LimitSpec("ws:12", requests_per_minute=10, tokens_per_minute=100, concurrent=1)
        assert (await a.acquire([key], tokens=0, lease="a", now=0)).admitted
        # when a request through the workspace and the key is refused
        assert not (await a.acquire([ws, key], tokens=50, lease="b", now=0)).admitted
        # then nothing of the workspace exists in Redis, nor a lease for the request
        assert await a.client.keys(f"{prefix}:{{w12}}:limit:ws:12:*") == []
        assert await a.client.exists(f"{prefix}:{{w12}}:lease:b") == 0
        await a.aclose()

    _run(test)


@needs_redis
def test_r_lim_1_a_zero_limit_refuses_in_redis_too():
    async def test(prefix: str) -> None:
        a = _replica(prefix)
        spec = [LimitSpec("key:34", tokens_per_minute=0)]
        verdict = await a.acquire(spec, tokens=0, lease="a", now=0)
        assert (verdict.admitted, verdict.retry_after_s) == (False, 60)
        await a.aclose()

    _run(test)


@needs_redis
def test_r_lim_1_idle_scopes_vanish_by_their_ttl():
    async def test(prefix: str) -> None:
        a = _replica(prefix, lease_ttl_s=30)
        spec = [LimitSpec("ws:12", requests_per_minute=60, tokens_per_minute=600, concurrent=2)]
        assert (await a.acquire(spec, tokens=60, lease="a", now=0)).admitted
        ttl_ms = {
            kind: await a.client.pttl(f"{prefix}:{{w12}}:limit:ws:12:{kind}")
            for kind in ("requests", "tokens", "concurrent")
        }
        # a bucket lives until it has drained (1 s per request, 0.1 s per token) plus 1 s
        assert 1000 < ttl_ms["requests"] <= 2000
        assert 6000 < ttl_ms["tokens"] <= 7000
        assert 30_000 < ttl_ms["concurrent"] <= 31_000
        assert 29_000 < await a.client.pttl(f"{prefix}:{{w12}}:lease:a") <= 30_000
        await a.aclose()

    _run(test)


def test_r_lim_1_redis_down_fails_closed():
    async def test() -> None:
        # given a store nothing listens on
        limiter = RedisLimiter.from_url("redis://127.0.0.1:1/0", prefix="unreachable")
        spec = [LimitSpec("ws:12", requests_per_minute=60)]
        # then neither acquire nor release admits or passes silently
        with pytest.raises(LimitStoreUnavailable):
            await limiter.acquire(spec, tokens=0, lease="a", now=0)
        with pytest.raises(LimitStoreUnavailable):
            await limiter.release(spec, lease="a", tokens_reserved=0, tokens_used=0, now=0)
        await limiter.aclose()

    asyncio.run(test())


@needs_redis
def test_r_lim_1_r_bey_9_usage_reads_what_another_replica_took_and_changes_nothing():
    async def test(prefix: str) -> None:
        # given a replica that took 2 requests, 300 tokens and 2 slots
        a, b = _replica(prefix), _replica(prefix)
        spec = [LimitSpec("key:34", requests_per_minute=60, tokens_per_minute=1000, concurrent=2)]
        for lease in ("x", "y"):
            assert (await a.acquire(spec, tokens=150, lease=lease, now=0)).admitted
        # when the other replica reads the usage
        usage = await b.usage(spec, now=0)
        # then it sees them (drained by the few ms since), and reading took no slot
        used = {u.kind.value: u.used for u in usage}
        assert 1.9 < used["requests"] <= 2
        assert 299 < used["tokens"] <= 300
        assert used["concurrent"] == 2
        assert [u.limit for u in usage] == [60, 1000, 2]
        assert not (await b.acquire(spec, tokens=1, lease="z", now=0)).admitted
        await a.release(spec, lease="x", tokens_reserved=150, tokens_used=150, now=0)
        assert [u.used for u in await b.usage(spec, now=0) if u.kind.value == "concurrent"] == [1]
        await a.aclose()
        await b.aclose()

    _run(test)
