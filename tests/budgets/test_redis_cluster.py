"""Budgets, rate limits, allowances, the sweeper, shared cooldowns and pins, and the live
rollup on a real Redis Cluster of three masters on 127.0.0.1 (deploy/redis_cluster.py;
SPEC R-BEY-9, R-OPS-4): every script's keys in one slot (a script touching two would be
refused with CROSSSLOT), workspaces spread over the masters, and a stale slot map
corrected after MOVED. Needs `redis-server` and `redis-cli` (Debian's redis), skipped
without them."""

from __future__ import annotations

import asyncio
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import redis.asyncio as aredis
from redis.crc import key_slot

from budgets.admitter import GiveBack
from budgets.create import create_stores
from budgets.redis import pipeline
from budgets.redis.admitter import RedisAdmitter
from budgets.redis.limits import RedisLimiter
from budgets.redis.store import RedisBudgetStore, shared_client
from budgets.rules.budgets import BudgetRule, charges, key_scope, workspace_scope
from budgets.rules.holds import Hold
from budgets.rules.limits import LimitSpec
from budgets.stores.ledger import Ledger
from deploy.redis_cluster import redis_cluster
from gateway.state.shared_state import SharedState
from routing.engine.cooldowns import Cooldowns
from routing.engine.live import Observation, window_of
from routing.engine.live_slices import Slice
from routing.rollup import RedisSlices
from tests.budgets.conftest import run_sync
from tests.waiting import until

pytestmark = [
    pytest.mark.skipif(not shutil.which("redis-server"), reason="needs Debian's redis-server"),
    pytest.mark.django_db(transaction=True),  # the ledger's rows
]
WORST = 1_000  # micro-dollars a request reserves
WORKSPACES = range(1, 13)  # enough that they land on every master


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_cluster(Path(tmp_path_factory.mktemp("cluster"))) as url:
        yield url


def _masters_of(url: str, keys: list[str]) -> set[int]:
    """The ports of the masters holding `keys`."""
    client = redis.RedisCluster.from_url(url)
    try:
        return {client.get_node_from_key(key).port for key in keys}
    finally:
        client.close()


def _admitter(url: str, prefix: str, allowance_requests: int = 0) -> RedisAdmitter:
    client = shared_client(url, cluster=True)
    ledger = Ledger(flush_s=0.01, run_sync=run_sync)
    limiter, budgets = RedisLimiter(client, prefix=prefix), RedisBudgetStore(client, ledger, prefix)
    return RedisAdmitter(limiter, budgets, client, None, allowance_requests)


def _hold(workspace_id: int, request: str, now: float, cap: int = 20 * WORST) -> Hold:
    rules = [BudgetRule(workspace_scope(workspace_id), "daily", cap),
             BudgetRule(key_scope(workspace_id, "app"), "daily", cap)]  # fmt: skip
    return Hold(request, workspace_id, charges(rules, now), WORST, now + 60)


def _limits(workspace_id: int) -> list[LimitSpec]:
    return [LimitSpec(workspace_scope(workspace_id), 100, 100_000, 10),
            LimitSpec(key_scope(workspace_id, "app"), 2, None, None)]  # fmt: skip


def test_r_bey_9_each_workspaces_keys_share_one_slot_and_workspaces_spread(cluster) -> None:
    prefix = f"t-{uuid.uuid4().hex[:8]}"
    admitter = _admitter(cluster, prefix)
    store, limiter = admitter.budgets, admitter.limiter
    now, firsts = time.time(), []
    for workspace_id in WORKSPACES:
        hold = _hold(workspace_id, "r", now)
        (reserve_keys, _), (settle_keys, _) = store.reserve_call(hold), store.settle_call(hold, 1)
        (acquire_keys, _), _ = limiter.acquire_call(_limits(workspace_id), tokens=1, lease="l")
        keys = [*reserve_keys, *settle_keys, *acquire_keys]
        assert len({key_slot(key.encode()) for key in keys}) == 1, keys
        firsts.append(keys[0])
    assert len(_masters_of(cluster, firsts)) == 3


def test_r_lim_1_admissions_of_many_workspaces_in_one_pipeline_reach_each_master(cluster) -> None:
    async def run() -> None:
        admitter, now = _admitter(cluster, f"t-{uuid.uuid4().hex[:8]}"), time.time()
        holds = {ws: _hold(ws, f"r{ws}", now, cap=WORST) for ws in WORKSPACES}
        # given one busy worker's admissions for twelve workspaces at once
        taken = await asyncio.gather(*(
            admitter.take(_limits(ws), 10, f"lease-{ws}", holds[ws], now) for ws in WORKSPACES
        ))  # fmt: skip
        # then each got its own verdict from its workspace's master
        assert all(t.admitted for t in taken)
        # and a second request of each is refused by its own budget (a cap of one request)
        again = await asyncio.gather(*(
            admitter.take(_limits(ws), 10, f"again-{ws}", _hold(ws, f"s{ws}", now, cap=WORST), now)
            for ws in WORKSPACES
        ))  # fmt: skip
        assert [t.budget.admitted for t in again if t.budget] == [False] * len(WORKSPACES)
        # and settling them all charges each workspace exactly its own cost
        settled = await asyncio.gather(*(
            admitter.give_back(GiveBack(tuple(_limits(ws)), f"lease-{ws}", 10, 7, holds[ws],
                                        100 + ws, now))
            for ws in WORKSPACES
        ))  # fmt: skip
        assert [s.after if s else None for s in settled] == [
            {c.counter: 100 + ws for c in holds[ws].charges} for ws in WORKSPACES
        ]
        state = await admitter.budgets.read([holds[3].charges[0].counter])
        assert state[holds[3].charges[0].counter].spent_micros == 103
        await admitter.aclose()

    asyncio.run(run())


def test_r_lim_2_an_abandoned_reservation_on_any_master_is_swept(cluster) -> None:
    async def run() -> None:
        admitter, now = _admitter(cluster, f"t-{uuid.uuid4().hex[:8]}"), time.time()
        store = admitter.budgets
        gone = [_hold(ws, f"gone-{ws}", now) for ws in WORKSPACES]
        for hold in gone:
            assert (await store.reserve(hold)).admitted
        # when the sweeper runs after their expiry, knowing the workspaces
        swept = await store.sweep(now + 61, list(WORKSPACES))
        # then each was charged its whole reservation, whichever master holds it
        assert sorted(h.request_id for h in swept) == sorted(h.request_id for h in gone)
        state = await store.read([gone[5].charges[0].counter])
        assert state[gone[5].charges[0].counter].spent_micros == WORST
        await store.ledger.flush()

    asyncio.run(run())


def test_r_pol_2_allowances_open_and_close_on_a_cluster(cluster) -> None:
    async def run() -> None:
        admitter = _admitter(cluster, f"t-{uuid.uuid4().hex[:8]}", allowance_requests=8)
        now, limits = time.time(), [LimitSpec(workspace_scope(7), 1_000, None, None)]
        taken = []
        for i in range(5):  # the first alone, then an allowance of eight
            hold = _hold(7, f"a{i}", now, cap=1_000 * WORST)
            taken.append((hold, await admitter.take(limits, 0, f"a{i}", hold, now)))
        assert all(t.admitted for _, t in taken)
        assert any(t.drawn is not None for _, t in taken)
        for i, (hold, t) in enumerate(taken):
            await admitter.give_back(GiveBack(tuple(limits), f"a{i}", 0, 0, hold, 10, now, t.drawn))
        await admitter.aclose()  # the allowance closes: what its requests cost, settled
        counter = taken[0][0].charges[0].counter
        state = (await admitter.budgets.read([counter]))[counter]
        assert (state.spent_micros, state.reserved_micros, state.requests) == (50, 0, 5)
        await admitter.budgets.ledger.flush()

    asyncio.run(run())


def test_one_pipeline_runs_each_script_on_its_keys_master_and_follows_moved(cluster) -> None:
    async def run() -> None:
        client = shared_client(cluster, cluster=True)
        sha = _sha(cluster)
        commands = [("EVALSHA", sha, 1, f"t:{{w{ws}}}:x", ws) for ws in WORKSPACES]
        keys = [str(command[3]) for command in commands]
        assert len(_masters_of(cluster, keys)) == 3
        # when one pipeline carries scripts whose keys are on every master
        replies = await pipeline.send(client, commands)
        # then each ran on its key's master (a master refuses a key of another's slot)
        assert [int(r) for r in replies] == list(WORKSPACES)
        # given a map that says one master holds every slot (a resharding it missed)
        nodes = client.nodes_manager
        one = nodes.get_node_from_slot(key_slot(keys[0].encode()))
        for slot in nodes.slots_cache:
            nodes.slots_cache[slot] = [one]
        # then the scripts the others hold come back MOVED, go again, and all answer
        assert [int(r) for r in await pipeline.send(client, commands)] == list(WORKSPACES)
        assert len({nodes.get_node_from_slot(key_slot(k.encode())).port for k in keys}) == 3
        await client.aclose()

    asyncio.run(run())


def _sha(url: str) -> str:
    """A script that sets its key to its argument and answers it, on every master."""
    client = redis.RedisCluster.from_url(url)
    try:
        return str(client.script_load("redis.call('SET', KEYS[1], ARGV[1]) return ARGV[1]"))
    finally:
        client.close()


def test_r_bey_9_cooldowns_reach_the_other_replica_through_a_cluster(cluster) -> None:
    async def run() -> None:
        prefix = f"t-{uuid.uuid4().hex[:8]}"
        boards = [Cooldowns(), Cooldowns()]
        sharing = [SharedState(cluster, prefix, cluster=True) for _ in boards]
        for board, shared in zip(boards, sharing, strict=True):
            shared.share_cooldowns(board)
        await sharing[0].start()
        await sharing[1].start()
        now = time.time()
        endpoints = [f"provider/model-{i}@eu" for i in range(6)]  # keys on several masters
        for endpoint in endpoints:
            boards[0].failure(endpoint, 429, now)
        await until(lambda: boards[1].cooling(time.time()) >= set(endpoints), "the cooldowns")
        # and a replica that starts later loads them from every master
        late, board = SharedState(cluster, prefix, cluster=True), Cooldowns()
        late.share_cooldowns(board)
        await late.start(wait_s=10)
        assert board.cooling(time.time()) >= set(endpoints)
        for shared in (*sharing, late):
            await shared.stop()

    asyncio.run(run())


def test_r_obs_2_the_live_rollup_keeps_its_slices_on_a_cluster(cluster) -> None:
    client = redis.RedisCluster.from_url(cluster)
    slices, now = RedisSlices(client, f"t-{uuid.uuid4().hex[:8]}"), time.time()
    seen = window_of([Observation(at=now, ok=True, latency_ms=80.0, tokens_per_s=None)])
    for worker in ("a", "b"):
        slices.push(Slice(worker, now, int(now), {"ep": ("provider", seen)}))
    assert sorted(piece.worker for piece in slices.since(now - 5)) == ["a", "b"]
    slices.trim(now + 1)
    assert slices.since(now - 5) == []
    client.close()


def test_healthz_asks_every_master(cluster) -> None:
    from gateway.api.readiness import _redis_ok

    assert asyncio.run(_redis_ok(cluster, cluster=True))
    assert not asyncio.run(_redis_ok("redis://127.0.0.1:1/0", cluster=True))


def test_the_stores_settings_pick_the_cluster_and_refuse_a_braced_prefix(cluster) -> None:
    made = create_stores("redis", redis_url=cluster, prefix="switchyard", lease_ttl_s=60,
                         run_sync=run_sync, flush_s=1, count_alert=lambda *_: None,
                      cluster=True)  # fmt: skip
    assert isinstance(made.admitter, RedisAdmitter)
    assert isinstance(made.admitter.client, aredis.RedisCluster)
    assert made.admitter.budgets.client is made.admitter.client
    with pytest.raises(ValueError, match="must not hold"):
        create_stores("redis", redis_url=cluster, prefix="a{b}", lease_ttl_s=60,
                      run_sync=run_sync, flush_s=1, count_alert=lambda *_: None,
                      cluster=True)  # fmt: skip
