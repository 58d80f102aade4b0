"""`manage.py` commands for the live tests without a Python start each: one Django process
per environment runs them one after another, as `manage.py` would.

A `manage.py` subprocess costs ~1.3 s here, nearly all of it importing Django and the
apps; the live suites ran ~150 of them. The server keeps what matters of the command line:
its own environment (so its own settings and database), the command's stdout and stderr,
its exit status (`CommandError` → 1), stdin. Tests about the command line itself run
`manage.py` (gateway.processes.manage) instead.

Run as `python -m tests.commands`: it reads one JSON request a line ({"args": [...],
"stdin": "..."}) and answers one JSON line ({"status": 0, "stdout": "...", "stderr": "..."})
on the pipe it was started with."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import threading
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[1]


class CommandServer:
    """One long-lived `python -m tests.commands` with a fixed environment."""

    def __init__(self, env: Mapping[str, str], log_path: Path | None = None) -> None:
        self._log = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.commands"],
            env={
                **env,
                "DJANGO_SETTINGS_MODULE": env.get("DJANGO_SETTINGS_MODULE", "gateway.settings"),
            },
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
        )
        self._lock = threading.Lock()

    def run(self, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
        """(exit status, stdout, stderr) of `manage.py ARGS`."""
        assert self._process.stdin
        assert self._process.stdout
        with self._lock:
            self._process.stdin.write(json.dumps({"args": list(args), "stdin": stdin}) + "\n")
            self._process.stdin.flush()
            line = self._process.stdout.readline()
        if not line:
            raise RuntimeError(f"the command server exited ({self._process.poll()}) on {args}")
        reply = json.loads(line)
        return reply["status"], reply["stdout"], reply["stderr"]

    def close(self) -> None:
        if self._process.stdin:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._log is not subprocess.DEVNULL:
            self._log.close()  # type: ignore[union-attr]


class Commands:
    """A command server per distinct environment, started on first use."""

    def __init__(self, log_dir: Path | None = None) -> None:
        self._servers: dict[frozenset[tuple[str, str]], CommandServer] = {}
        self._log_dir = log_dir

    def manage(self, *args: str, env: Mapping[str, str], stdin: str | None = None) -> str:
        """`manage.py ARGS`' stdout; raise with its stderr on failure (as processes.manage)."""
        key = frozenset(env.items())
        if key not in self._servers:
            log = self._log_dir / "commands.log" if self._log_dir else None
            self._servers[key] = CommandServer(env, log)
        status, stdout, stderr = self._servers[key].run(*args, stdin=stdin)
        if status != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{stderr}")
        return stdout

    def close(self) -> None:
        for server in self._servers.values():
            server.close()
        self._servers.clear()


def execute(args: list[str], stdin: str | None) -> tuple[int, str, str]:
    from django.core.management import execute_from_command_line
    from django.db import connections

    out, err = io.StringIO(), io.StringIO()
    status = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        saved_stdin, sys.stdin = sys.stdin, io.StringIO(stdin or "")
        try:
            execute_from_command_line(["manage.py", *args])
        except SystemExit as exit_:
            code = exit_.code
            status = code if isinstance(code, int) else (0 if code is None else 1)
        except Exception:
            traceback.print_exc()
            status = 1
        finally:
            sys.stdin = saved_stdin
            connections.close_all()  # as the process's exit would: no lock or session kept
    return status, out.getvalue(), err.getvalue()


def serve(requests: IO[str], replies: IO[str]) -> None:
    import django

    django.setup()
    for line in requests:
        request = json.loads(line)
        status, stdout, stderr = execute(request["args"], request.get("stdin"))
        replies.write(json.dumps({"status": status, "stdout": stdout, "stderr": stderr}) + "\n")
        replies.flush()


if __name__ == "__main__":
    # The replies go on a copy of fd 1; fd 1 itself then points at stderr, so nothing a
    # command writes past sys.stdout (a child process, C code) can break a reply.
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    serve(sys.stdin, replies)
