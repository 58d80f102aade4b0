"""Start a fake upstream in a subprocess on a free port, for tests and benchmarks.

    with running_fake_upstream("slow", api_key="sk-test", error_rate={503: 0.1}) as fake:
        client = openai.OpenAI(base_url=fake.base_url, api_key="sk-test")
        fake.set_faults(["status:503", {"fault": "hang", "times": None}])
        assert fake.stats()["requests"] == 0

Keyword flags are the CLI flags with underscores (`latency_ms=50` -> `--latency-ms 50`);
a mapping becomes `503=0.1,429=0.05`, a list becomes comma-separated.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import httpx


def free_port(host: str = "127.0.0.1") -> int:
    """A port the OS says is free now (it can be taken before the caller binds it)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


# The directory holding this package, so the child imports this same code.
REPO_ROOT = Path(__file__).resolve().parents[1]
# A cold start (interpreter, uvloop, httptools, orjson) takes ~0.3 s; allow slow CI boxes.
STARTUP_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 5.0
# A free port found by binding to port 0 can be taken before the child binds it.
START_ATTEMPTS = 3


class FakeUpstreamProcess:
    """A running fake upstream subprocess and its control API."""

    def __init__(self, process: subprocess.Popen[bytes], host: str, port: int, log: IO[bytes]):
        self.process = process
        self.host = host
        self.port = port
        self._log = log
        self._control = httpx.Client(base_url=self.root_url, timeout=5.0)

    @property
    def root_url(self) -> str:
        """`http://host:port`: the base URL for the Anthropic SDK (it appends /v1 itself)."""
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """`http://host:port/v1`: the base URL for the OpenAI SDK and provider configs."""
        return f"{self.root_url}/v1"

    def stats(self) -> dict[str, Any]:
        """`GET /_fake/stats`."""
        return self._call("GET", "/_fake/stats")

    def set_faults(
        self, faults: Sequence[str | Mapping[str, Any]] = (), *, down: bool = False
    ) -> dict[str, Any]:
        """Replace the fault script; a string entry is `{"fault": entry}` (times 1)."""
        entries = [{"fault": item} if isinstance(item, str) else dict(item) for item in faults]
        return self._call("POST", "/_fake/faults", {"faults": entries, "down": down})

    def release(self) -> None:
        """`POST /_fake/release`: the requests a `hold` fault keeps answer now, and those
        it meets later pass at once (until reset)."""
        self._call("POST", "/_fake/release")

    def set_cache_mode(self, mode: str) -> None:
        """Report cached prompt tokens as `none`, `always` or `repeat` from now on (until
        reset, which restores the profile's mode)."""
        self._call("POST", "/_fake/cache", {"cached_tokens": mode})

    def set_echo(self, echo: bool = True) -> None:
        """Echo mode: every error answer (body, an `x-echo` header, a 429's Retry-After,
        in-band error frames) quotes the credential and the prompt it was sent."""
        self._call("POST", "/_fake/echo", {"echo": echo})

    def reset(self) -> None:
        """Clear stats, faults, `down`, echo, the prompt-cache memory; reseed the error
        draws."""
        self._call("POST", "/_fake/reset")

    def log_text(self) -> str:
        """What the server wrote to stderr so far (for failure messages)."""
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it has not exited within STOP_TIMEOUT_S."""
        self._control.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()

    def _call(self, method: str, path: str, payload: Any = None) -> Any:
        response = self._control.request(method, path, json=payload)
        response.raise_for_status()
        return response.json()


@contextmanager
def running_fake_upstream(profile: str = "fast", **flags: Any) -> Iterator[FakeUpstreamProcess]:
    """A fake upstream for the duration of the block; it is stopped on exit."""
    fake = start_fake_upstream(profile, **flags)
    try:
        yield fake
    finally:
        fake.stop()


def start_fake_upstream(
    profile: str = "fast", *, host: str = "127.0.0.1", **flags: Any
) -> FakeUpstreamProcess:
    """Start the subprocess and wait until `/_fake/health` answers; call `.stop()` after.

    Raises RuntimeError with the server's stderr when it does not come up.
    """
    problem = ""
    for _ in range(START_ATTEMPTS):
        port = free_port(host)
        args = ["--host", host, "--port", str(port), "--profile", profile, *flag_args(flags)]
        # Owned by the FakeUpstreamProcess, which closes it in stop().
        log = tempfile.TemporaryFile()  # noqa: SIM115
        process = subprocess.Popen(
            [sys.executable, "-m", "fakeupstream", *args],
            cwd=REPO_ROOT,
            env=_child_env(),
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        fake = FakeUpstreamProcess(process, host, port, log)
        if _wait_healthy(fake):
            return fake
        problem = fake.log_text()
        fake.stop()
    raise RuntimeError(f"fake upstream did not start:\n{problem}")


def flag_args(flags: Mapping[str, Any]) -> list[str]:
    """`{"latency_ms": 50, "error_rate": {503: 0.1}}` -> `--latency-ms 50 --error-rate 503=0.1`."""
    args: list[str] = []
    for key, value in flags.items():
        if value is None:
            continue
        if isinstance(value, Mapping):
            value = ",".join(f"{k}={v}" for k, v in value.items())
        elif isinstance(value, list | tuple):
            value = ",".join(str(item) for item in value)
        args += [f"--{key.replace('_', '-')}", str(value)]
    return args


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env


def _wait_healthy(fake: FakeUpstreamProcess) -> bool:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline and fake.process.poll() is None:
        try:
            if httpx.get(f"{fake.root_url}/_fake/health", timeout=1.0).status_code == 200:
                return True
        except httpx.TransportError:
            pass  # not listening yet
        time.sleep(0.02)
    return False
