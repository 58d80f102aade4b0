"""Added latency at c1 from a lean client: one httpx connection a target, non-stream chat
requests in turn, the targets alternating in blocks of BLOCK requests, forward then
backward, so a machine that drifts slower within the measure weighs on each alike.

`make bench`'s own c1 numbers carry its load generator's cost (about 2 ms on this machine)
and measure each path for seconds on end, minutes apart from the one it is compared with;
on a shared machine whose speed drifts by 10 % within a minute that cannot tell a 3 %
change or a +0.3 ms bar. Alternating blocks of 50 can (docs/performance.md)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from contextlib import ExitStack

import httpx

from bench.load import PROMPT, Target

BLOCK = 50  # requests to one target before the next takes its turn
WARMUP_BLOCKS = 2  # each target's first blocks, not measured


def lean_p50s(targets: Sequence[Target], requests: int) -> list[float]:
    """The p50 in ms of `requests` requests to each target (chat-shaped ones only), in the
    targets' order."""
    took: list[list[float]] = [[] for _ in targets]
    with ExitStack() as stack:
        clients = [stack.enter_context(httpx.Client(timeout=30.0)) for _ in targets]
        order = list(range(len(targets)))
        for block in range(-(-requests // BLOCK) + WARMUP_BLOCKS):
            for i in order if block % 2 else order[::-1]:
                target, client = targets[i], clients[i]
                body = {"model": target.model, "messages": PROMPT}
                headers = {"Authorization": f"Bearer {target.api_key}"}
                for _ in range(BLOCK):
                    started = time.perf_counter()
                    client.post(target.url, json=body, headers=headers).raise_for_status()
                    if block >= WARMUP_BLOCKS:
                        took[i].append(time.perf_counter() - started)
    return [statistics.median(t) * 1000 for t in took]
