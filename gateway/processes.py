"""Starting Switchyard's own processes from Python: the gateway under uvicorn and
`manage.py` commands, each with an explicit environment. Used by `manage.py rundemo`,
the live API tests and the benchmark, so all three run the gateway the same way."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx

from fakeupstream.process import free_port

ROOT = Path(__file__).resolve().parent.parent


def manage(*args: str, env: Mapping[str, str], stdin: str | None = None) -> str:
    """Run `manage.py ARGS` and return its stdout; raise with stderr on failure."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        env=dict(env),
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{result.stderr}")
    return result.stdout


def wait_until_up(url: str, timeout_s: float, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode} before {url} answered")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=1.0).status_code < 500:
                return
        time.sleep(0.05)
    raise RuntimeError(f"{url} did not answer within {timeout_s} s")


@dataclass
class GatewayProcess:
    port: int
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"


SERVERS = ("granian", "uvicorn")
DEFAULT_SERVER = "granian"  # docs/decisions/0004-asgi-server.md


# Concurrent connections one granian worker serves (`--backpressure`). Granian takes a
# permit before each accept and keeps it for the connection's life, idle keep-alive ones
# included; its default, backlog / workers, is 1,024 for one worker, where a flood of
# streams waiting for a first token stalled (docs/performance.md, "Streams waiting for a
# first token"). A waiting stream measured ~66 KiB and holds two open files (client and
# upstream), so 8,192 per worker is ~530 MiB and ~16,400 files: set the open-file limit
# (`ulimit -n`) above that, or lower SWITCHYARD_WORKER_CONCURRENCY. The upstream pool's
# default is the same number (gateway/settings.py), so no stream waits for a pool slot.
WORKER_CONCURRENCY = 8192
# Connections the kernel queues on the listening socket until a worker accepts them (a
# reconnect storm, a worker at its cap); Linux caps it at net.core.somaxconn (4096 by
# default since 5.4), and beyond the queue a connect waits for SYN retransmits.
LISTEN_BACKLOG = 4096


def worker_concurrency() -> int:
    """SWITCHYARD_WORKER_CONCURRENCY from this process's environment, or the default."""
    value = os.environ.get("SWITCHYARD_WORKER_CONCURRENCY", "").strip()
    return int(value) if value else WORKER_CONCURRENCY


def gateway_command(
    port: int, workers: int = 1, server: str = DEFAULT_SERVER, host: str = "127.0.0.1"
) -> list[str]:
    """The command line that serves the gateway; both servers run it with uvloop, HTTP/1.1,
    the ASGI lifespan on (traces are flushed at shutdown) and no access log (SPEC D-12).

    Both get LISTEN_BACKLOG; granian also WORKER_CONCURRENCY connections per worker.
    uvicorn has no such cap by default and gets none: its `--limit-concurrency` answers
    503 past the limit instead of queueing, and a stream counts for as long as it runs."""
    backlog, concurrency = str(LISTEN_BACKLOG), str(worker_concurrency())
    if server == "granian":
        return [
            sys.executable,
            "-m",
            "granian",
            "--interface",
            "asgi",
            "--host",
            host,
            "--port",
            str(port),
            "--workers",
            str(workers),
            "--loop",
            "uvloop",
            "--http",
            "1",
            "--no-ws",
            "--backlog",
            backlog,
            "--backpressure",
            concurrency,
            "gateway.asgi:application",
        ]
    if server == "uvicorn":
        return [
            sys.executable,
            "-m",
            "uvicorn",
            "gateway.asgi:application",
            "--host",
            host,
            "--port",
            str(port),
            "--workers",
            str(workers),
            "--loop",
            "uvloop",
            "--http",
            "httptools",
            "--no-access-log",
            "--lifespan",
            "on",
            "--backlog",
            backlog,
        ]
    raise ValueError(f"server must be one of {SERVERS}, not {server!r}")


@contextlib.contextmanager
def running_gateway(
    env: Mapping[str, str],
    *,
    port: int | None = None,
    workers: int = 1,
    server: str = DEFAULT_SERVER,
    log_path: Path | None = None,
    tree: Path = ROOT,
) -> Iterator[GatewayProcess]:
    """Start the gateway, wait for /healthz, stop it (SIGTERM, then SIGKILL) on exit.
    `tree`: another checkout's gateway, run by its own virtualenv (bench/trees.py)."""
    port = port or free_port()
    log = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115
    metrics_dir = tempfile.TemporaryDirectory(prefix="switchyard-metrics-")
    command = gateway_command(port, workers, server)
    if tree != ROOT:
        command[0] = str(tree / ".venv" / "bin" / "python")
    process = subprocess.Popen(
        command,
        env=with_metrics_dir(env, workers, metrics_dir.name),
        cwd=tree,
        stdout=log,
        stderr=log,
    )
    try:
        wait_until_up(f"http://127.0.0.1:{port}/healthz", 30.0, process)
        yield GatewayProcess(port=port, process=process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if log_path:
            log.close()  # type: ignore[union-attr]
        metrics_dir.cleanup()


def with_metrics_dir(env: Mapping[str, str], workers: int, folder: str) -> dict[str, str]:
    """Several workers must share their Prometheus samples through files, or `/metrics`
    shows whichever worker answered the scrape; the folder must start empty."""
    merged = dict(env)
    if workers > 1:
        merged.setdefault("PROMETHEUS_MULTIPROC_DIR", folder)
    return merged


def base_env(**overrides: str) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.update(overrides)
    return env
