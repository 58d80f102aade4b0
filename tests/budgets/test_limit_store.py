"""The in-process limit store of the embedded default (SPEC R-LIM-1): acquire, release,
lease expiry, the bounded memory, and one lock across threads."""

from __future__ import annotations

import asyncio
import threading

from budgets.rules.limits import LimitSpec, LimitVerdict
from budgets.stores.limit_store import LimitStore, MemoryLimiter

NOW = 1_767_225_600.0


def _acquire(
    limiter: MemoryLimiter, specs: list[LimitSpec], *, lease: str, tokens: int = 0,
    now: float = NOW,
) -> LimitVerdict:  # fmt: skip
    return asyncio.run(limiter.acquire(specs, tokens=tokens, lease=lease, now=now))


def _release(
    limiter: MemoryLimiter, specs: list[LimitSpec], *, lease: str, reserved: int = 0,
    used: int = 0, now: float = NOW,
) -> None:  # fmt: skip
    asyncio.run(
        limiter.release(specs, lease=lease, tokens_reserved=reserved, tokens_used=used, now=now)
    )


def test_r_lim_1_memory_limiter_is_a_limit_store():
    store: LimitStore = MemoryLimiter()
    assert callable(store.acquire)
    assert callable(store.release)


def test_r_lim_1_memory_limiter_admits_the_limit_then_refuses():
    # given
    limiter = MemoryLimiter()
    spec = [LimitSpec("key:34", requests_per_minute=60)]
    # when
    verdicts = [_acquire(limiter, spec, lease=f"r{i}") for i in range(61)]
    # then
    assert [v.admitted for v in verdicts] == [True] * 60 + [False]
    assert (verdicts[-1].retry_after_s, verdicts[-1].refused) == (1, "key:34/requests")


def test_r_lim_1_release_refunds_unused_tokens_once():
    # given 1000 tokens per minute, 900 reserved, 100 used
    limiter = MemoryLimiter()
    spec = [LimitSpec("ws:12", tokens_per_minute=1000)]
    assert _acquire(limiter, spec, lease="a", tokens=900).admitted
    assert not _acquire(limiter, spec, lease="b", tokens=800).admitted
    # when released twice (two exit paths)
    _release(limiter, spec, lease="a", reserved=900, used=100)
    _release(limiter, spec, lease="a", reserved=900, used=100)
    # then 800 refunded once: 100 charged, 900 left
    verdict = _acquire(limiter, spec, lease="b", tokens=800)
    assert (verdict.admitted, verdict.headers["x-ratelimit-remaining-tokens"]) == (True, "100")


def test_r_lim_1_concurrency_slot_frees_on_release():
    limiter = MemoryLimiter()
    spec = [LimitSpec("key:34", concurrent=1)]
    assert _acquire(limiter, spec, lease="a").admitted
    refused = _acquire(limiter, spec, lease="b")
    assert (refused.admitted, refused.refused, refused.retry_after_s) == (
        False, "key:34/concurrent", 1,
    )  # fmt: skip
    _release(limiter, spec, lease="a")
    assert _acquire(limiter, spec, lease="b").admitted


def test_r_lim_1_a_killed_holders_lease_expires():
    # given a holder that never releases (its process died)
    limiter = MemoryLimiter(lease_ttl_s=30)
    spec = [LimitSpec("key:34", concurrent=1, tokens_per_minute=1000)]
    assert _acquire(limiter, spec, lease="dead", tokens=500).admitted
    # then its slot is taken until the lease expires, and free after
    assert not _acquire(limiter, spec, lease="b", now=NOW + 29.9).admitted
    assert _acquire(limiter, spec, lease="b", now=NOW + 30).admitted
    # and a release after expiry refunds nothing: the reservation stays charged
    _release(limiter, spec, lease="dead", reserved=500, used=0, now=NOW + 31)
    assert not _acquire(limiter, spec, lease="c", tokens=500, now=NOW + 31).admitted


def test_r_lim_1_memory_limiter_takes_nothing_when_one_scope_refuses():
    # given the key exhausted
    limiter = MemoryLimiter()
    ws = LimitSpec("ws:12", requests_per_minute=10, concurrent=1)
    key = LimitSpec("key:34", requests_per_minute=1)
    assert _acquire(limiter, [key], lease="a").admitted
    # when a request through both is refused
    assert not _acquire(limiter, [ws, key], lease="b").admitted
    # then the workspace's requests and its one slot are untouched
    verdict = _acquire(limiter, [ws], lease="c")
    assert (verdict.admitted, verdict.headers["x-ratelimit-remaining-requests"]) == (True, "9")


def test_r_lim_1_idle_scopes_are_dropped():
    # given many scopes touched once, with tokens and leases
    limiter = MemoryLimiter(lease_ttl_s=30)
    for i in range(100):
        spec = [LimitSpec(f"key:{i}", requests_per_minute=60, tokens_per_minute=600, concurrent=2)]
        _acquire(limiter, spec, lease=f"r{i}", tokens=10)
    assert limiter.tracked == 400  # 200 buckets, 100 leases, 100 admitted requests
    # when a minute passes with no traffic there, and one request elsewhere
    _acquire(limiter, [LimitSpec("ws:1", requests_per_minute=1)], lease="x", now=NOW + 61)
    # then only the new one is left
    assert limiter.tracked == 2


def test_r_lim_1_one_lock_across_threads():
    # given 4 threads, each with its own event loop, racing for one 60-per-minute scope
    limiter = MemoryLimiter()
    spec = [LimitSpec("ws:12", requests_per_minute=60)]
    admitted: list[bool] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        for i in range(50):
            verdict = _acquire(limiter, spec, lease=f"{n}-{i}")
            with lock:
                admitted.append(verdict.admitted)

    # when
    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # then
    assert (admitted.count(True), admitted.count(False)) == (60, 140)


def test_r_lim_1_usage_reads_what_each_limit_has_in_use_and_changes_nothing():
    # given 3 of 60 requests, 300 of 1000 tokens and 2 of 5 slots taken
    limiter = MemoryLimiter(lease_ttl_s=30)
    spec = [LimitSpec("key:34", requests_per_minute=60, tokens_per_minute=1000, concurrent=5)]
    for lease in ("a", "b", "c"):
        assert _acquire(limiter, spec, lease=lease, tokens=100).admitted
    _release(limiter, spec, lease="c", reserved=100, used=100)
    # when read 6 s later: 6 requests' and 100 tokens' worth of the minute have drained
    usage = asyncio.run(limiter.usage(spec, now=NOW + 6))
    # then
    used = {(u.kind.value, u.limit): (round(u.used, 6), round(u.reset_s, 6)) for u in usage}
    assert used == {("requests", 60): (0.0, 0.0), ("tokens", 1000): (200.0, 12.0),
                    ("concurrent", 5): (2.0, 0.0)}  # fmt: skip
    assert [u.remaining for u in usage] == [60.0, 800.0, 3.0]
    # and reading took nothing: two more slots are still free of five, then none
    assert [_acquire(limiter, spec, lease=f"d{i}", now=NOW + 6).admitted for i in range(4)] == [
        True, True, True, False,
    ]  # fmt: skip
    # leases past their expiry are not in use
    expired = asyncio.run(limiter.usage(spec, now=NOW + 37))
    assert [u.used for u in expired if u.kind.value == "concurrent"] == [0.0]
