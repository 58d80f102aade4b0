"""The processes of the rolling-restart harness (deploy/rollout.py): the replicas of
`switchyard serve`, each started, SIGTERMed and restarted; HAProxy in front of them; the
Celery worker and beat behind them; and `wait_until`, the harness's bounded polling."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from fakeupstream.process import free_port
from gateway.processes import ROOT

GRACE_S, DRAIN_S = 2.0, 20.0  # each replica's SWITCHYARD_DRAIN_GRACE_SECONDS, _DRAIN_SECONDS


@dataclass
class Replica:
    name: str
    port: int
    log: Path
    process: subprocess.Popen[bytes] | None = None
    events: list[str] = field(default_factory=list)


@contextlib.contextmanager
def background(env: dict[str, str], folder: Path) -> Iterator[None]:
    """The Celery worker and beat, for as long as the block runs."""
    celery = [sys.executable, "-m", "celery", "-A", "gateway"]
    commands = {
        "worker": [*celery, "worker", "--loglevel", "WARNING", "--concurrency", "1"],
        "beat": [
            *celery,
            "beat",
            "--loglevel",
            "WARNING",
            "--schedule",
            str(folder / "beat-schedule"),
        ],
    }
    processes = {}
    for name, command in commands.items():
        with open(folder / f"{name}.log", "ab") as log:
            processes[name] = subprocess.Popen(command, env=env, cwd=ROOT, stdout=log, stderr=log)
    try:
        yield
        for name, process in processes.items():
            if process.poll() is not None:
                raise RuntimeError(f"celery {name} exited {process.returncode} during the run")
    finally:
        for process in processes.values():
            process.terminate()
            process.wait(timeout=20)


@contextlib.contextmanager
def balancer(replicas: list[Replica], folder: Path) -> Iterator[str]:
    """HAProxy in front of the replicas; yields the chat completions URL through it."""
    port = free_port()
    servers = "\n".join(f"  server {r.name} 127.0.0.1:{r.port} check" for r in replicas)
    config = folder / "haproxy.cfg"
    # A replica answering /readyz 503 (draining) is out after two checks, 0.5 s, well
    # inside its grace; back after two good ones. A connection that fails or closes
    # without an answer is retried on another replica (no request reached a gateway).
    config.write_text(
        textwrap.dedent(f"""\
        defaults
          mode http
          timeout connect 2s
          timeout client 90s
          timeout server 90s
          retries 3
          option redispatch
          retry-on conn-failure empty-response
        frontend gateway
          bind 127.0.0.1:{port}
          default_backend replicas
        backend replicas
          balance roundrobin
          option httpchk GET /readyz
          default-server inter 250ms fall 2 rise 2
        """)
        + servers
        + "\n"
    )
    with open(folder / "haproxy.log", "ab") as log:
        process = subprocess.Popen(["haproxy", "-db", "-f", str(config)], stdout=log, stderr=log)
    try:
        yield f"http://127.0.0.1:{port}/v1/chat/completions"
    finally:
        process.terminate()
        process.wait(timeout=10)


def start(replica: Replica, env: dict[str, str]) -> None:
    command = [sys.executable, str(ROOT / "manage.py"), "serve", "--port", str(replica.port)]
    with open(replica.log, "ab") as log:
        replica.process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=log, stderr=log)
    wait_until(lambda: _ready(replica), f"{replica.name} to be ready", 30)


def stop(replicas: list[Replica]) -> None:
    """SIGTERM the replicas still running and wait for them to drain and exit."""
    running = [r.process for r in replicas if r.process and r.process.poll() is None]
    for process in running:
        process.send_signal(signal.SIGTERM)
    for process in running:
        process.wait(timeout=GRACE_S + DRAIN_S + 15)


def restart(replica: Replica, env: dict[str, str]) -> None:
    assert replica.process is not None
    signalled = time.monotonic()
    replica.process.send_signal(signal.SIGTERM)
    code = replica.process.wait(timeout=GRACE_S + DRAIN_S + 15)
    exited = time.monotonic()
    start(replica, env)
    replica.events.append(
        f"SIGTERM, exit {code} after {exited - signalled:.1f} s, "
        f"ready again after {time.monotonic() - exited:.1f} s"
    )
    if code != 0:
        replica.events.append(f"FAILED: exited {code}")


def _ready(replica: Replica) -> bool:
    assert replica.process is not None
    if replica.process.poll() is not None:
        raise RuntimeError(f"{replica.name} exited {replica.process.returncode}; see its log")
    try:
        return httpx.get(f"http://127.0.0.1:{replica.port}/readyz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def wait_until(
    condition: Callable[[], bool], what: str, timeout_s: float, fail: bool = True
) -> bool:
    """Poll `condition` every 0.1 s for up to `timeout_s`: True once it holds; past the
    deadline a RuntimeError naming `what`, or False with `fail=False`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    if fail:
        raise RuntimeError(f"waited {timeout_s:.0f} s for {what}")
    return False
