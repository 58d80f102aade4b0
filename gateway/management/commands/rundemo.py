"""`manage.py rundemo`: serve the demo — the four fake upstreams the demo catalog points
at, and the gateway with its console — until Ctrl-C. `make run` calls it after
`bootstrap --demo`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from gateway.demo.traffic import send_demo_traffic
from gateway.processes import (
    DEFAULT_SERVER,
    ROOT,
    SERVERS,
    gateway_command,
    wait_until_up,
    with_metrics_dir,
)

# (port, fakeupstream flags): what gateway/demo/switchyard-demo.yaml expects.
DEMO_UPSTREAMS = (
    (9101, ["--name", "fake-eu-owned", "--latency-ms", "40", "--ttft-ms", "40"]),
    (9102, ["--name", "fake-eu-hosted", "--latency-ms", "20", "--ttft-ms", "20"]),
    (9103, ["--name", "fake-us"]),
    (9104, ["--name", "fake-anthropic", "--latency-ms", "30", "--ttft-ms", "30"]),
)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


class Command(BaseCommand):
    help = "Serve the demo: fake upstreams on 9101-9104 and the gateway."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--workers", type=int, default=1)
        parser.add_argument("--server", choices=SERVERS, default=DEFAULT_SERVER)
        parser.add_argument("--key-file", help="file with the demo key to print in the hints")
        parser.add_argument(
            "--no-traffic", action="store_true", help="send no demo requests at start"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        # Stop the children on SIGTERM and on Ctrl-C, even when started in the background
        # (where a non-interactive shell leaves SIGINT ignored).
        signal.signal(signal.SIGTERM, _interrupt)
        signal.signal(signal.SIGINT, _interrupt)
        children: list[subprocess.Popen[bytes]] = []
        # The demo is plain HTTP on loopback: the console's cookies cannot be Secure there.
        env = {"SWITCHYARD_SECURE_COOKIES": "false", **os.environ, "PYTHONUNBUFFERED": "1"}
        try:
            for port, flags in DEMO_UPSTREAMS:
                command = [sys.executable, "-m", "fakeupstream", "--port", str(port)]
                children.append(subprocess.Popen([*command, *flags], cwd=ROOT, env=env))
            for (port, _flags), child in zip(DEMO_UPSTREAMS, children, strict=True):
                wait_until_up(f"http://127.0.0.1:{port}/_fake/health", 15, child)
            port = options["port"]
            metrics_dir = tempfile.mkdtemp(prefix="switchyard-metrics-")
            gateway = subprocess.Popen(
                gateway_command(port, options["workers"], options["server"]),
                cwd=ROOT,
                env=with_metrics_dir(env, options["workers"], metrics_dir),
            )
            children.append(gateway)
            wait_until_up(f"http://127.0.0.1:{port}/healthz", 30, gateway)
            if options["key_file"] and not options["no_traffic"]:
                self._send_traffic(port, Path(options["key_file"]).read_text().strip())
            self._print_hints(port, options["key_file"])
            gateway.wait()
        except KeyboardInterrupt:
            pass
        finally:
            for child in children:
                if child.poll() is None:
                    child.send_signal(signal.SIGTERM)
            for child in children:
                try:
                    child.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    child.kill()

    def _send_traffic(self, port: int, key: str) -> None:
        answered, refused = send_demo_traffic(f"http://127.0.0.1:{port}", key)
        self.stdout.write(
            f"sent {answered + refused} demo requests for the console to show "
            f"({answered} answered, {refused} refused)"
        )

    def _print_hints(self, port: int, key_file: str | None) -> None:
        key = Path(key_file).read_text().strip() if key_file else "<your key>"
        base = f"http://127.0.0.1:{port}"
        password_file = Path(settings.VAR_DIR) / "demo-admin-password"
        password = password_file.read_text().strip() if password_file.exists() else "?"
        self.stdout.write(
            f"""
Switchyard is serving the demo on {base}

  API key: {key}

  curl {base}/v1/chat/completions \\
    -H "Authorization: Bearer {key}" -H "Content-Type: application/json" \\
    -d '{{"model": "meta/llama-3.3-70b", "messages": [{{"role": "user", "content": "Hello"}}]}}'

  Console: {base}/console/  (admin / {password}; operators' admin: {base}/admin/)
  Metrics: {base}/metrics   Health: {base}/healthz

Ctrl-C stops the gateway and the fake upstreams.
"""
        )
