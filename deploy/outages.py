"""A dependency taken away under the rolling-restart harness's load (`make rollout-test
ROLLOUT_ARGS=--outage redis|postgres`): Redis shut down (it keeps nothing on disk, so it
comes back empty) and started again, or the PostgreSQL cluster stopped and started.

Both act on the services of this machine with the commands that start them
(`../.library/env`): run it only where nothing else needs them meanwhile."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

DOWN_S = {"redis": 5.0, "postgres": 30.0}
UP_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class Outage:
    service: str
    began_s: float  # seconds after the load started
    ended_s: float  # when the service answered again


def take_down(service: str, redis_url: str, started_at: float) -> Outage:
    """Stop `service`, keep it down for DOWN_S, start it, wait until it answers."""
    began = time.monotonic()
    if service == "redis":
        _redis_cli(redis_url, "shutdown", "nosave", check=False)  # the connection drops
        time.sleep(DOWN_S[service])
        port = str(urlparse(redis_url).port or 6379)
        subprocess.run(
            [
                "redis-server",
                "--daemonize",
                "yes",
                "--bind",
                "127.0.0.1",
                "-::1",
                "--port",
                port,
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                "/var/lib/redis",
                "--logfile",
                "/var/log/redis/ci.log",
            ],
            check=True,
        )
        _until(lambda: _redis_cli(redis_url, "ping", check=False) == "PONG", "Redis")
    elif service == "postgres":
        _cluster("stop")
        time.sleep(DOWN_S[service])
        _cluster("start")
        _until(
            lambda: subprocess.run(["pg_isready", "-h", "127.0.0.1", "-q"]).returncode == 0,
            "PostgreSQL",
        )
    else:
        raise ValueError(f"no outage for {service!r}: redis or postgres")
    return Outage(service, began - started_at, time.monotonic() - started_at)


def _redis_cli(redis_url: str, *args: str, check: bool) -> str:
    done = subprocess.run(
        ["redis-cli", "-u", redis_url, *args], capture_output=True, text=True, check=check
    )
    return done.stdout.strip()


def _cluster(action: str) -> None:
    version = sorted(p.name for p in Path("/etc/postgresql").iterdir())[-1]
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", action], check=True
    )


def _until(condition, what: str) -> None:
    deadline = time.monotonic() + UP_TIMEOUT_S
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not come back within {UP_TIMEOUT_S:.0f} s")
        time.sleep(0.1)
