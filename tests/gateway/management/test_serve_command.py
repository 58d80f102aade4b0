"""`switchyard serve` (the image's CMD, R-OPS-1): several workers get a Prometheus folder
that holds no samples of an earlier run; the server runs under the drain's supervisor
(tests/live/fleet/test_drain_api.py drives it)."""

from __future__ import annotations

import os
import tempfile

import pytest
from django.core.management import call_command

from gateway.management.commands import serve
from gateway.management.commands.serve import metrics_folder
from gateway.processes import gateway_command


def test_one_worker_keeps_its_samples_in_memory():
    assert metrics_folder({"A": "1"}, workers=1) == {"A": "1"}


def test_several_workers_get_a_fresh_folder_of_their_own(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    first = metrics_folder({}, workers=2)["PROMETHEUS_MULTIPROC_DIR"]
    second = metrics_folder({}, workers=2)["PROMETHEUS_MULTIPROC_DIR"]
    assert first != second
    assert os.listdir(first) == []


def test_a_given_folder_loses_the_samples_of_the_last_run_only(tmp_path):
    (tmp_path / "counter_1234.db").write_bytes(b"stale")
    (tmp_path / "notes.txt").write_text("kept")
    env = metrics_folder({"PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}, workers=2)
    assert env["PROMETHEUS_MULTIPROC_DIR"] == str(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_serve_supervises_the_command_the_tests_and_the_benchmark_run(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    seen = {}

    def supervise(command, environ, grace_s, drain_s):  # type: ignore[no-untyped-def]
        seen.update(argv=command, env=environ, drain=(grace_s, drain_s))
        return 0

    monkeypatch.setattr(serve, "supervise", supervise)
    with pytest.raises(SystemExit) as exited:
        call_command("serve", "--host", "0.0.0.0", "--port", "8123", "--workers", "2")
    assert exited.value.code == 0
    assert seen["argv"] == gateway_command(8123, 2, host="0.0.0.0")
    assert "PROMETHEUS_MULTIPROC_DIR" in seen["env"]
    assert seen["drain"] == (5.0, 25.0)  # the defaults, within Kubernetes' 30 s
