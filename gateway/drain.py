"""Graceful drain (SPEC R-OPS-3, docs/deployment.md "Drain"): the supervisor's part and each
server worker's part.

`switchyard serve` runs the server as its child (`supervise`). At SIGTERM it writes the
drain file, whose path every worker finds in SWITCHYARD_DRAIN_FILE, with the drain's
deadline. From then on each worker's /readyz answers 503 while the server still accepts,
for SWITCHYARD_DRAIN_GRACE_SECONDS, so load balancers that keep sending new connections
for a while after SIGTERM are still served. Then the server gets SIGTERM: it stops
accepting and waits for the requests in flight, whose answers and streams go on; at
shutdown the ASGI lifespan settles budget reservations, writes the queued traces (or
spools them) and closes the upstream connections. A request still running at the
deadline, SWITCHYARD_DRAIN_SECONDS after the grace, is cancelled as a client's disconnect
cancels it (upstream closed, reservation settled, trace written, its error naming the
drain). SIGINT (Ctrl-C) drains the same way with no grace."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

DRAIN_FILE_ENV = "SWITCHYARD_DRAIN_FILE"
CUT_SHORT = "cut short at the server's drain deadline"
# After the deadline, the workers' lifespan shutdown (traces written, connections closed)
# gets this long before the supervisor kills what is left of the server.
SHUTDOWN_MARGIN_S = 10.0
WATCH_POLL_S = 0.2


class WorkerDrain:
    """One worker's view of the drain: whether it has begun, and its requests in flight."""

    def __init__(self, drain_file: str | None) -> None:
        self.drain_file = drain_file
        self.deadline: float | None = None  # epoch seconds, once draining
        self.cut = False  # the deadline passed and what still ran was cancelled
        self.in_flight: set[asyncio.Task[object]] = set()

    def draining(self) -> bool:
        if self.deadline is None and self.drain_file and os.path.exists(self.drain_file):
            self.deadline = read_deadline(Path(self.drain_file))
        return self.deadline is not None

    def track(self, task: asyncio.Task[object]) -> None:
        self.in_flight.add(task)
        task.add_done_callback(self.in_flight.discard)

    async def watch(self) -> None:
        """Until the drain begins, then until its deadline: cancel what still runs."""
        while not self.draining():
            await asyncio.sleep(WATCH_POLL_S)
        assert self.deadline is not None
        await asyncio.sleep(max(0.0, self.deadline - time.time()))
        self.cut = True
        for task in list(self.in_flight):
            task.cancel(CUT_SHORT)


current = WorkerDrain(os.environ.get(DRAIN_FILE_ENV))


def read_deadline(path: Path) -> float:
    try:
        return float(json.loads(path.read_text())["deadline"])
    except (OSError, ValueError, KeyError):  # unreadable: drain now rather than never
        return time.time()


def write_deadline(path: Path, deadline: float) -> None:
    """Atomically: a worker never reads half a file."""
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps({"deadline": deadline}))
    os.replace(partial, path)


SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGCHLD}


def supervise(
    command: Sequence[str], environ: Mapping[str, str], grace_s: float, drain_s: float
) -> int:
    """Run the server until it exits; drain it on SIGTERM or SIGINT. Returns its exit code:
    0 for a drain that ended in time, else the server's (128 + the signal that killed it)."""
    folder = Path(tempfile.mkdtemp(prefix="switchyard-drain-"))
    drain_file = folder / "draining"
    signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)  # taken with sigtimedwait below
    child = subprocess.Popen(
        list(command),
        env={**environ, DRAIN_FILE_ENV: str(drain_file)},
        process_group=0,  # a terminal's Ctrl-C reaches this process only; it is forwarded
        preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_SETMASK, set()),  # as it was
    )
    draining = False
    stop_at: float | None = None  # when the server is told to stop accepting
    stop_signal = signal.SIGTERM
    kill_at: float | None = None  # when what is left of it is killed
    try:
        while child.poll() is None:
            now = time.monotonic()
            pending = [at for at in (stop_at, kill_at) if at is not None]
            wait_s = max(0.0, min(pending) - now) if pending else None
            got = (
                signal.sigtimedwait(SIGNALS, wait_s)
                if wait_s is not None
                else signal.sigwaitinfo(SIGNALS)
            )
            now = time.monotonic()
            if got is not None and got.si_signo != signal.SIGCHLD and not draining:
                draining = True
                grace = grace_s if got.si_signo == signal.SIGTERM else 0.0
                stop_signal = signal.Signals(got.si_signo)
                write_deadline(drain_file, time.time() + grace + drain_s)
                stop_at, kill_at = now + grace, now + grace + drain_s + SHUTDOWN_MARGIN_S
            if stop_at is not None and now >= stop_at:
                child.send_signal(stop_signal)
                stop_at = None
            if kill_at is not None and now >= kill_at:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGKILL)
                kill_at = None
        if draining and child.returncode == -stop_signal:
            return 0  # uvicorn re-raises the signal it stopped for, once it has stopped
        return child.returncode if child.returncode >= 0 else 128 - child.returncode
    finally:
        shutil.rmtree(folder, ignore_errors=True)
