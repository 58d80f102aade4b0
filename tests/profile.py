"""`make test-profile`: where the suite's wall time goes. Loaded with `-p tests.profile`.

Prints two tables at the end of the run (and writes them to var/test-profile.md):
- per module: time (setup + call + teardown of its tests, module fixtures included),
  tests, and the share of all the tests' time (under xdist, of both workers' time added up);
- per cause: time spent starting gateways and fake upstreams, in `manage.py` subprocesses,
  in `time.sleep` (inside polling helpers and out), in hypothesis tests and in browser tests.

The causes are measured by wrapping the functions in this process; a gateway a test starts
in a subprocess of its own is not seen here (its time shows in its module's row)."""

from __future__ import annotations

import contextlib
import functools
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
causes: dict[str, float] = defaultdict(float)
counts: dict[str, int] = defaultdict(int)
modules: dict[str, float] = defaultdict(float)
module_tests: dict[str, int] = defaultdict(int)
hypothesis_s = 0.0
browser_s = 0.0
started = time.monotonic()


def timed(cause: str, function: Any) -> Any:
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        begun = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            causes[cause] += time.perf_counter() - begun
            counts[cause] += 1

    return wrapper


def timed_context(cause: str, factory: Any) -> Any:
    """For a context manager that starts a server: only the time to its `yield`."""

    @functools.wraps(factory)
    @contextlib.contextmanager
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        begun = time.perf_counter()
        with factory(*args, **kwargs) as started:
            causes[cause] += time.perf_counter() - begun
            counts[cause] += 1
            yield started

    return wrapper


def patch() -> None:
    """Before the conftests import these functions by name (a `-p` plugin loads first)."""
    import fakeupstream.process
    import gateway.processes

    gateway.processes.manage = timed("manage.py subprocesses", gateway.processes.manage)
    fakeupstream.process.start_fake_upstream = timed(
        "fake upstream starts", fakeupstream.process.start_fake_upstream
    )
    original = gateway.processes.running_gateway
    gateway.processes.running_gateway = timed_context("gateway starts", original)
    time.sleep = timed("time.sleep", time.sleep)
    import tests.commands

    tests.commands.CommandServer.__init__ = timed(  # type: ignore[method-assign]
        "command server starts", tests.commands.CommandServer.__init__
    )
    tests.commands.CommandServer.run = timed(  # type: ignore[method-assign]
        "manage.py commands (in a command server)", tests.commands.CommandServer.run
    )


patch()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    global hypothesis_s, browser_s
    module = report.nodeid.split("::", 1)[0]
    modules[module] += report.duration
    if report.when == "call":
        module_tests[module] += 1
        if "hypothesis_property" in report.keywords:
            hypothesis_s += report.duration
    if module.startswith("tests/browser/"):
        browser_s += report.duration


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if getattr(item.obj, "is_hypothesis_test", False):  # type: ignore[attr-defined]
            item.keywords["hypothesis_property"] = True  # (reaches the xdist controller)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """On an xdist worker: hand this worker's causes to the controller."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["profile"] = {"causes": dict(causes), "counts": dict(counts)}


def pytest_testnodedown(node: Any, error: Any) -> None:
    """On the xdist controller: add up what each worker measured."""
    handed = getattr(node, "workeroutput", {}).get("profile", {})
    for cause, seconds in handed.get("causes", {}).items():
        causes[cause] += seconds
    for cause, count in handed.get("counts", {}).items():
        counts[cause] += count


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    total = time.monotonic() - started
    busy = sum(modules.values())
    lines = [f"Wall time {total:.0f} s; the tests' own time, added up: {busy:.0f} s.", "",
             "| module | tests | s | share |", "|---|---:|---:|---:|"]  # fmt: skip
    for module, seconds in sorted(modules.items(), key=lambda kv: -kv[1]):
        share = 100 * seconds / busy if busy else 0
        lines.append(f"| {module} | {module_tests[module]} | {seconds:.1f} | {share:.1f} % |")
    lines += ["", "| cause | calls | s |", "|---|---:|---:|"]
    for cause, seconds in sorted(causes.items(), key=lambda kv: -kv[1]):
        lines.append(f"| {cause} | {counts[cause]} | {seconds:.1f} |")
    lines.append(f"| hypothesis tests | | {hypothesis_s:.1f} |")
    lines.append(f"| browser tests | | {browser_s:.1f} |")
    out = ROOT / "var" / "test-profile.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    for line in ["", *lines[:40], f"… the whole table: {out.relative_to(ROOT)}"]:
        terminalreporter.write_line(line)
