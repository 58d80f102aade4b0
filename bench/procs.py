"""Reading processes and the machine from /proc (Linux): CPU time, resident memory, the
gateway's process tree, and the facts printed above every result table."""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

PROC = Path("/proc")
CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")
# Packages whose versions change the numbers; printed with every run.
REPORTED_PACKAGES = ("django", "uvicorn", "granian", "httpx", "httpx-aiohttp", "aiohttp", "uvloop")
# A worker is idle and booted once its RSS stops moving for this long (imports are done).
RSS_SETTLED_S = 0.5
RSS_SETTLE_TIMEOUT_S = 15.0
# Workers and the resource tracker exit on their own shortly after the server process.
LEFTOVER_GRACE_S = 3.0


@dataclass(frozen=True, slots=True)
class ProcessTree:
    """The gateway's server process and the request-serving workers under it."""

    master: int
    workers: tuple[int, ...]
    helpers: tuple[int, ...]  # e.g. multiprocessing's resource tracker
    started_at_ticks: dict[int, int]  # pid -> start time, to tell a reused pid apart

    @property
    def all_pids(self) -> tuple[int, ...]:
        return (self.master, *self.workers, *self.helpers)


def _stat_fields(pid: int) -> list[str]:
    """Fields of /proc/PID/stat after the command name (field 3 onwards); [] if gone."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return []
    return text[text.rindex(")") + 2 :].split()


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (0.0 once it is gone)."""
    fields = _stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS_PER_S if fields else 0.0


def rss_mb(pid: int) -> float:
    """VmRSS of a process in MB (0.0 once it is gone)."""
    try:
        status = (PROC / str(pid) / "status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def established_connections(port: int, pids: tuple[int, ...]) -> tuple[int, ...]:
    """How many established TCP connections to local `port` each process holds (IPv4)."""
    inodes = set()
    for line in (PROC / "net" / "tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "01" and int(fields[1].rsplit(":", 1)[1], 16) == port:
            inodes.add(f"socket:[{fields[9]}]")
    counts = []
    for pid in pids:
        held = 0
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            for fd in (PROC / str(pid) / "fd").iterdir():
                with contextlib.suppress(OSError):
                    held += os.readlink(fd) in inodes
        counts.append(held)
    return tuple(counts)


STORE_COMMANDS = ("redis-server", "postgres")  # `--store postgres-redis`


def store_cpu_seconds() -> float:
    """CPU seconds so far of every Redis and PostgreSQL process on the machine: the
    gateway's stores, and their share of a request's cost. A backend that exits between
    two readings takes its time with it (the gateway's connections outlive a window)."""
    total = 0.0
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if (entry / "comm").read_text().strip() in STORE_COMMANDS:
                    total += cpu_seconds(int(entry.name))
    return total


def machine_busy_s() -> float:
    """CPU seconds all CPUs spent not idle since boot (first line of /proc/stat)."""
    values = [int(v) for v in (PROC / "stat").read_text().split("\n", 1)[0].split()[1:]]
    idle, iowait = values[3], values[4]
    # guest and guest_nice (fields 9, 10) are already included in user and nice.
    return (sum(values[:8]) - idle - iowait) / CLOCK_TICKS_PER_S


def wait_for_quiet_machine(max_busy_pct: float, timeout_s: float) -> float:
    """Wait until the machine's busy time over one second is below `max_busy_pct` of one
    core (someone else's build or test run would skew every number); return the last
    reading, which is still above the threshold when `timeout_s` ran out."""
    deadline = time.monotonic() + timeout_s
    while True:
        before = machine_busy_s()
        time.sleep(1.0)
        busy_pct = (machine_busy_s() - before) * 100
        if busy_pct < max_busy_pct or time.monotonic() >= deadline:
            return busy_pct


def children(pid: int) -> list[int]:
    """Direct children, found by scanning /proc for PPid == pid."""
    found = []
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields and int(fields[1]) == pid:
                found.append(int(entry.name))
    return sorted(found)


def _start_ticks(pid: int) -> int:
    """Start time of a live process; -1 once it is gone or a zombie (it has exited)."""
    fields = _stat_fields(pid)
    return int(fields[19]) if fields and fields[0] != "Z" else -1


def _cmdline(pid: int) -> str:
    try:
        return (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except (FileNotFoundError, ProcessLookupError):
        return ""


def gateway_tree(master: int) -> ProcessTree:
    """Workers are the master's children, except multiprocessing's resource tracker."""
    kids = children(master)
    helpers = tuple(pid for pid in kids if "resource_tracker" in _cmdline(pid))
    workers = tuple(pid for pid in kids if pid not in helpers)
    return ProcessTree(master, workers, helpers, {pid: _start_ticks(pid) for pid in kids})


def wait_for_idle_workers(master: int, workers: int) -> ProcessTree:
    """Wait until `workers` workers exist and their RSS has settled (booted, imports done).

    The gateway answers /healthz as soon as one worker is up; the others may still be
    importing Django. Bounded by RSS_SETTLE_TIMEOUT_S; returns the tree as found then.
    """
    deadline = time.monotonic() + RSS_SETTLE_TIMEOUT_S
    previous: list[float] = []
    tree = gateway_tree(master)
    while time.monotonic() < deadline:
        time.sleep(RSS_SETTLED_S)
        tree = gateway_tree(master)
        current = [rss_mb(pid) for pid in tree.workers]
        if len(tree.workers) >= workers and current == previous:
            return tree
        previous = current
    return tree


def kill_leftovers(tree: ProcessTree) -> list[int]:
    """SIGKILL any process of the tree still alive LEFTOVER_GRACE_S after its master stopped.

    Only pids recorded from our own gateway are touched; a pid reused by another program
    since has another start time and is skipped.
    """
    deadline = time.monotonic() + LEFTOVER_GRACE_S
    while time.monotonic() < deadline and _alive(tree):
        time.sleep(0.05)
    killed = []
    for pid in _alive(tree):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
    return killed


def _alive(tree: ProcessTree) -> list[int]:
    alive = []
    for pid in (*tree.workers, *tree.helpers):
        ticks = _start_ticks(pid)
        if ticks != -1 and ticks == tree.started_at_ticks.get(pid):
            alive.append(pid)
    return alive


def source_digest(root: Path, packages: tuple[str, ...]) -> str:
    """A short sha256 of the Python sources of `packages`: the tree has no commits to name,
    and it changes under a running benchmark when someone edits, so runs can be compared."""
    digest = hashlib.sha256()
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def machine_facts() -> dict[str, str]:
    """CPU count and model, kernel, Python and the package versions that matter."""
    model = "unknown"
    with contextlib.suppress(OSError):
        for line in (PROC / "cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    facts = {
        "CPUs (nproc)": str(len(os.sched_getaffinity(0))),
        "CPU model": model,
        "kernel": platform.release(),
        "Python": platform.python_version(),
    }
    for package in REPORTED_PACKAGES:
        try:
            facts[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            facts[package] = "not installed"
    return facts


def kill_all_leftovers(trees: Sequence[ProcessTree]) -> None:
    """`kill_leftovers` for every gateway a benchmark started, said on stderr."""
    killed = [pid for tree in trees for pid in kill_leftovers(tree)]
    if killed:
        progress(f"killed gateway processes that outlived their master: {killed}")


def tail_text(path: Path, lines: int) -> str:
    """The last `lines` lines of a log, for a failure message."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as exc:
        return f"(could not read {path}: {exc})"


def progress(line: str) -> None:
    """A benchmark's progress line, on stderr (stdout holds the results)."""
    print(line, file=sys.stderr, flush=True)
