"""`switchyard serve`: the gateway's server, as the image's CMD and Kubernetes run it.

It runs the command line `gateway_command` builds — the one the live tests and the
benchmark run — as its child and drains it on SIGTERM (gateway/drain.py): /readyz answers
503 for SWITCHYARD_DRAIN_GRACE_SECONDS while the server still accepts, then the server
stops accepting and finishes what is in flight, for at most SWITCHYARD_DRAIN_SECONDS."""

from __future__ import annotations

import os
import tempfile
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from gateway.drain import supervise
from gateway.processes import DEFAULT_SERVER, SERVERS, gateway_command


def metrics_folder(environ: dict[str, str], workers: int) -> dict[str, str]:
    """Several workers share their Prometheus samples through files in one folder, which
    must hold no samples of an earlier run; one worker keeps them in memory."""
    if workers < 2:
        return environ
    folder = environ.get("PROMETHEUS_MULTIPROC_DIR")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        for stale in Path(folder).glob("*.db"):  # only prometheus_client's own files
            stale.unlink()
        return environ
    return {**environ, "PROMETHEUS_MULTIPROC_DIR": tempfile.mkdtemp(prefix="switchyard-metrics-")}


class Command(BaseCommand):
    help = "Serve the gateway and the console (granian by default, or uvicorn)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--workers", type=int, default=1, help="server worker processes")
        parser.add_argument("--server", choices=SERVERS, default=DEFAULT_SERVER)

    def handle(self, *args: Any, **options: Any) -> None:
        command = gateway_command(
            options["port"], options["workers"], options["server"], host=options["host"]
        )
        environ = metrics_folder(dict(os.environ), options["workers"])
        raise SystemExit(supervise(command, environ, settings.DRAIN_GRACE_S, settings.DRAIN_S))
