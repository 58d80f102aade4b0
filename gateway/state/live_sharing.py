"""This worker's part in the live-metric rollup (SPEC R-OBS-2): twice every
`SWITCHYARD_LIVE_ROLLUP_S` it hands what it observed since its last tick to the slice
store, rolls the window up itself when no Celery beat does (the embedded default, or a
beat that is overdue), and
reads the rollup back into the live metrics its router reads (routing/engine/live.py
merges in what the rollup has not seen yet). The same for the series of workspaces' own
credentials (BYOK), through a store and a rollup fleet of their own. A series with
nothing to hand in and no rollup to read back (the credentials' where no workspace brings
its own key) skips the roll-up (`share_series`). All of it runs in the database thread,
off the event loop.

A store or database that is away costs nothing but freshness: the slice goes back into
the worker's memory for the next tick, and a rollup older than `fleet_stale_s` is set
aside, so the router falls back on this worker's own window."""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
import weakref

from django.conf import settings

from gateway.state import runtime
from gateway.state.db_thread import in_db_thread
from routing.engine.live import Fleet, LiveMetrics
from routing.rollup import (
    CREDENTIALS,
    ENDPOINTS,
    Slice,
    SliceStore,
    read_fleet,
    roll_up,
    slice_store,
)

log = logging.getLogger(__name__)
# Names this worker's slices, so the rollup can say up to when it has seen each worker.
WORKER_ID = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
# The series (by this worker's live metrics of them) whose last pass handed in nothing and
# read no rollup back: most gateways have no workspace credential (BYOK), and their
# credential series would otherwise roll up an empty store on every tick of every worker.
# By the metrics object, so a test's `runtime.reset()` starts the next afresh.
_quiet: weakref.WeakSet[LiveMetrics] = weakref.WeakSet()


async def tick() -> None:
    """For each series (endpoints; workspaces' own credentials): hand in this worker's
    slice, roll up when no broker does, read the rollup back. A series whose store fails
    keeps its slice for the next tick and does not hold the other one back; the first
    failure is raised after both had their turn."""
    now = time.time()
    taken = [
        (live, series, live.take_slice())
        for series, live in ((ENDPOINTS, runtime.live()), (CREDENTIALS, runtime.credential_live()))
    ]

    def share() -> None:
        failed: Exception | None = None
        for live, series, (since, upto, windows) in taken:
            try:
                share_series(
                    live, slice_store(series), Slice(WORKER_ID, now, upto, windows), since, now
                )
            except Exception as error:
                failed = failed or error
        if failed is not None:
            raise failed

    await in_db_thread(share)()


def share_series(
    live: LiveMetrics, store: SliceStore, piece: Slice, since: int, now: float
) -> None:
    """One series' pass of the tick: hand `piece` in, roll up when no broker does, read the
    rollup back into `live`.

    A pass with nothing to hand in after a pass that handed in nothing and read nothing
    back skips the roll-up, the store's reads and writes: no rollup row is there to age
    out, and a worker that hands a slice in rolls it up on that same pass. It still reads
    the rollup back: skipping that would hide from this worker's health answers the
    traffic other workers roll up. A pass that fails is not quiet, so the next one rolls
    up what it may have left behind.

    With a Celery broker, beat rolls up; a worker rolls up itself only when the rollup it
    reads is overdue (`rollup_overdue`): a broker with no beat, or a beat whose Celery
    worker is away, would otherwise leave every worker showing only its own traffic."""
    was_quiet = live in _quiet
    _quiet.discard(live)
    if piece.windows:
        try:
            store.push(piece)
        except Exception:
            live.give_back_slice(since)  # counted in the next tick's slice instead
            raise
    beat = bool(settings.CELERY_BROKER_URL)  # Celery beat is to roll up, not the workers
    fleet = read_fleet(store.fleet, WORKER_ID) if beat else None
    if (not beat or rollup_overdue(fleet, now)) and (piece.windows or not was_quiet):
        roll_up(store, now)
        fleet = None
    if fleet is None:
        fleet = read_fleet(store.fleet, WORKER_ID)
    if fleet is not None:
        live.set_fleet(fleet)
    elif not piece.windows:
        _quiet.add(live)


def rollup_overdue(fleet: Fleet | None, now: float) -> bool:
    """No rollup yet, or the last one is older than one and a half intervals: beat's runs
    every `SWITCHYARD_LIVE_ROLLUP_S`, so a healthy beat's rollup is younger than that plus
    the task's latency whenever a worker reads it."""
    return fleet is None or now - fleet.at > 1.5 * settings.LIVE_ROLLUP_S
