"""The in-process scheduler of the embedded default (no Celery broker, `make run`): the
periodic tasks Celery beat runs in production — the rollout guard (R-BEY-4) and the
retention purge — run here on the gateway worker's event loop, their queries in its
database thread. With several workers each runs them; both tasks are safe to run twice
(the guard rolls a route back only while the version it judged is deployed, the purge
deletes what is expired). The budget sweeper, the trace spool's drain and the live-metric
sharing run on every worker, broker or not."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone

from audit.retention import purge_expired_traces
from gateway import metrics
from gateway.failure_log import RepeatedFailure
from gateway.state import admission_state, live_sharing, request_state
from gateway.state.db_thread import in_db_thread
from presets.rollout_guard import RolledBack, check_rollout_guards

log = logging.getLogger(__name__)

GUARD_TICK_S = 5.0  # how often routes are looked at; each is judged per its interval_s
PURGE_EVERY_S = 3600.0
TRACE_DRAIN_S = 1.0


@dataclass(frozen=True, slots=True)
class Job:
    name: str
    every_s: float
    run: Callable[[], object]


def guard_rollouts(now: float, *, interval_s: float | None) -> list[RolledBack]:
    """One pass of the rollout guard (presets/rollout_guard.py), each rollback counted in
    `switchyard_route_rollbacks_total`; Celery's task runs the same (gateway/tasks.py)."""
    rolled = check_rollout_guards(now, interval_s=interval_s)
    for done in rolled:
        metrics.ROUTE_ROLLBACKS.labels(done.route, str(done.version)).inc()
    return rolled


def jobs() -> list[Job]:
    override = settings.ROLLOUT_GUARD_INTERVAL_S
    return [
        Job(
            "rollout guard",
            override or GUARD_TICK_S,
            lambda: guard_rollouts(time.time(), interval_s=override),
        ),
        Job("retention purge", PURGE_EVERY_S, lambda: purge_expired_traces(timezone.now())),
    ]


_tasks: list[asyncio.Task[None]] = []


def start() -> None:
    """ASGI start-up: the budget sweeper; without a broker, each job every `every_s`."""
    if _tasks:
        return
    _tasks.append(asyncio.create_task(_sweep_budgets(settings.BUDGET_SWEEP_S)))
    _tasks.append(asyncio.create_task(_drain_traces(TRACE_DRAIN_S)))
    # Twice per rollup interval: a worker's traffic then reaches every other worker within
    # one interval (half to hand it in, half for the others to read it back).
    _tasks.append(asyncio.create_task(_share_live_metrics(settings.LIVE_ROLLUP_S / 2)))
    if not settings.CELERY_BROKER_URL:  # else Celery beat runs them (gateway/celery.py)
        _tasks.extend(asyncio.create_task(_every(job)) for job in jobs())


async def stop() -> None:
    for task in _tasks:
        task.cancel()
    await asyncio.gather(*_tasks, return_exceptions=True)
    _tasks.clear()


async def _sweep_budgets(every_s: float) -> None:
    """Charge budget reservations whose request never settled (R-LIM-2: a process killed
    mid-request). On every worker, broker or not: the in-process store is each worker's
    own, and sweeping a shared store twice charges nothing twice."""
    failures = RepeatedFailure(log, "sweeping budget reservations")
    while True:
        await asyncio.sleep(every_s)
        try:
            workspaces = (await request_state.current_snapshot()).workspaces
            swept = await admission_state.stores().budgets.sweep(time.time(), workspaces.keys())
        except Exception as error:  # the next round tries again
            failures.failed(error)
            continue
        failures.worked()
        if swept:
            log.warning("charged %d abandoned budget reservations in full", len(swept))


async def _drain_traces(every_s: float) -> None:
    """Traces this worker (or an earlier process) spooled while the database was away
    (R-OBS-1): each worker drains the spool of its own host, broker or not."""
    failures = RepeatedFailure(log, "draining the trace spool")
    while True:
        await asyncio.sleep(every_s)
        try:
            await request_state.drain_trace_spool()
        except Exception as error:  # the next round tries again
            failures.failed(error)
        else:
            failures.worked()


async def _share_live_metrics(every_s: float) -> None:
    """This worker's live-metric slice handed in and the rollup read back (R-OBS-2), on
    every worker; without a broker each also rolls up (gateway/state/live_sharing.py)."""
    failures = RepeatedFailure(log, "sharing live metrics")
    while True:
        await asyncio.sleep(every_s)
        try:
            await live_sharing.tick()
        except Exception as error:  # the next round tries again; the router keeps its own window
            failures.failed(error, level=logging.WARNING)
        else:
            failures.worked()


async def _every(job: Job) -> None:
    failures = RepeatedFailure(log, f"scheduled {job.name}")
    while True:
        await asyncio.sleep(job.every_s)
        try:
            await in_db_thread(job.run)()
        except Exception as error:  # the next round tries again
            failures.failed(error)
        else:
            failures.worked()
