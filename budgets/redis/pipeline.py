"""The admitter's round trips (redis/admitter.py): a call's commands as one redis-py
pipeline (`transaction=False`) on the worker's shared client (redis/store.py
`shared_client`: one Redis through its bounded pool, or a Redis Cluster, whose pipeline
sends each command to the master of its keys and sends again a command answered MOVED).

An error reply (NOSCRIPT) comes back in its command's place as a `ResponseError`
(`execute(raise_on_error=False)`). A connection that fails, or a Redis that sends nothing
for the client's socket timeout (2 s) while a reply is awaited, raises one of
redis-py's errors (store.py `REDIS_ERRORS`), which the admitter turns into a refusal.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from budgets.redis.store import AnyRedis

Command = Sequence[Any]  # a command's name and arguments: ("EVALSHA", sha, 1, key, …)
# Gets the replies of a call whose caller was cancelled once its commands were handed over.
GivenUp = Callable[[list[Any]], None] | None
# The loop turns the pipeline's task takes to write on a connection already open to one
# Redis: the pool checks the connection first (a read that finds nothing), then it writes.
WRITE_TURNS = 2


async def send(
    client: AnyRedis,
    commands: Sequence[Command],
    meanwhile: Callable[[], object] | None = None,
    given_up: GivenUp = None,
) -> list[Any]:
    """The replies to `commands`, in their order, from one pipeline.

    The pipeline runs in a task of its own. `meanwhile` runs once that task has had
    `WRITE_TURNS` turns of the loop — on an open connection to one Redis, the commands are
    written by then; one that connects first, or a cluster's node tasks, may write after
    it — and before the replies are awaited. From the moment the task exists, a caller
    that is cancelled (or whose `meanwhile` raises) leaves the pipeline running: its
    replies, when they come, go to `given_up`, so that what they took can be given back."""
    if not commands:
        return []
    pipe = client.pipeline(transaction=False)
    for command in commands:
        pipe.execute_command(*command)
    sent = asyncio.ensure_future(pipe.execute(raise_on_error=False))
    try:
        for _ in range(WRITE_TURNS):
            await asyncio.sleep(0)
        if meanwhile is not None:
            meanwhile()
        return list(await asyncio.shield(sent))
    except BaseException:
        if not sent.done():
            sent.add_done_callback(partial(_hand_over, given_up))
        raise


def _hand_over(given_up: GivenUp, sent: asyncio.Future[list[Any]]) -> None:
    """The replies of a pipeline its caller left, to `given_up`; none if it failed (its
    error read here, so that the loop does not report it as never retrieved)."""
    if sent.cancelled() or sent.exception() is not None or given_up is None:
        return
    given_up(list(sent.result()))
