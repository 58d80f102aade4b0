"""Every script call of one request names keys of one Redis Cluster slot, its workspace's,
whatever the key's name holds (colons, braces, any text): a property of the key names
alone, so no Redis is needed (SPEC R-BEY-9; tests/budgets/test_redis_cluster.py
runs the scripts on a real cluster)."""

from __future__ import annotations

import redis.asyncio as redis
from hypothesis import given
from hypothesis import strategies as st
from redis.crc import key_slot

from budgets.redis.limits import RedisLimiter
from budgets.redis.store import RedisBudgetStore, workspace_tag
from budgets.rules.budgets import BudgetRule, charges, key_scope, workspace_scope
from budgets.rules.holds import Hold
from budgets.rules.limits import LimitSpec
from budgets.stores.ledger import Ledger

CLIENT = redis.Redis()  # never connects: the calls are only built
STORE = RedisBudgetStore(CLIENT, Ledger(flush_s=1, run_sync=lambda f: f), "switchyard")
LIMITER = RedisLimiter(CLIENT, prefix="switchyard")
NOW = 1_800_000_000.0

workspaces = st.integers(min_value=1, max_value=2**53)
key_names = st.text(min_size=1, max_size=40)
periods = st.sampled_from(["daily", "weekly", "monthly"])


def _slots(keys: list[str]) -> set[int]:
    return {key_slot(key.encode()) for key in keys}


@given(workspaces, key_names, st.lists(periods, min_size=1, max_size=3), st.text(max_size=20))
def test_r_bey_9_a_reservations_calls_touch_one_slot(workspace_id, key_name, used, request):
    rules = [BudgetRule(key_scope(workspace_id, key_name), p, 5_000) for p in used]
    rules.append(BudgetRule(workspace_scope(workspace_id), "daily", 9_000))
    hold = Hold(request, workspace_id, charges(rules, NOW), 100, NOW + 60)
    calls = [STORE.reserve_call(hold), STORE.settle_call(hold, 7), STORE.cancel_call(hold),
             STORE.settle_call(hold, 7, requests=3)]  # fmt: skip
    slots = _slots([key for keys, _ in calls for key in keys])
    assert slots == {key_slot(workspace_tag(workspace_id).encode())}


@given(workspaces, key_names, st.text(min_size=1, max_size=20), st.integers(0, 10_000))
def test_r_bey_9_a_requests_limit_calls_touch_one_slot(workspace_id, key_name, lease, tokens):
    specs = [LimitSpec(workspace_scope(workspace_id), 60, 10_000, 5),
             LimitSpec(key_scope(workspace_id, key_name), 10, 1_000, 2)]  # fmt: skip
    (acquire, _), _ = LIMITER.acquire_call(specs, tokens=tokens, lease=lease)
    release, _ = LIMITER.release_call(specs, lease=lease, tokens_reserved=tokens, tokens_used=1)
    given_back, _ = LIMITER.return_call(specs, lease=lease, unused=3)
    assert _slots([*acquire, *release, *given_back]) == {
        key_slot(workspace_tag(workspace_id).encode())
    }
