"""A Redis Cluster of three masters on 127.0.0.1, for the rolling-restart harness
(`--redis-cluster`) and the cluster tests: three `redis-server` processes in cluster mode
on free ports, joined by `redis-cli --cluster create`, in a folder that goes with them.

Like the machine's own Redis they keep nothing on disk (no RDB, no AOF); each keeps its
`nodes.conf`, which cluster mode requires, in the folder."""

from __future__ import annotations

import contextlib
import random
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

MASTERS = 3
BUS_OFFSET = 10_000  # each node's cluster bus listens on its port + 10000
UP_TIMEOUT_S = 30.0


@contextlib.contextmanager
def redis_cluster(folder: Path) -> Iterator[str]:
    """A running cluster; yields the URL of one node (a client finds the others)."""
    ports = _free_ports(MASTERS)
    nodes: list[subprocess.Popen[bytes]] = []
    try:
        for port in ports:
            home = folder / f"redis-{port}"
            home.mkdir(parents=True)
            log = (home / "redis.log").open("wb")
            nodes.append(
                subprocess.Popen(
                    [
                        "redis-server",
                        "--port",
                        str(port),
                        "--bind",
                        "127.0.0.1",
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        "nodes.conf",
                        "--cluster-node-timeout",
                        "5000",
                        "--save",
                        "",
                        "--appendonly",
                        "no",
                        "--dir",
                        str(home),
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
        for port in ports:
            _until(lambda port=port: _cli(port, "ping") == "PONG", f"redis-server on {port}")
        subprocess.run(
            [
                "redis-cli",
                "--cluster",
                "create",
                *(f"127.0.0.1:{p}" for p in ports),
                "--cluster-replicas",
                "0",
                "--cluster-yes",
            ],
            check=True,
            capture_output=True,
        )
        # Every node must know every slot's owner before a client's first command.
        for port in ports:
            _until(
                lambda port=port: "cluster_state:ok" in _cli(port, "cluster", "info"),
                f"the cluster, as node {port} sees it",
            )
        yield f"redis://127.0.0.1:{ports[0]}/0"
    finally:
        for node in nodes:
            node.terminate()
        for node in nodes:
            try:
                node.wait(timeout=10)
            except subprocess.TimeoutExpired:
                node.kill()


def _free_ports(count: int) -> list[int]:
    """Ports free with their bus port too (which must stay below 65536)."""
    found: list[int] = []
    for port in random.sample(range(20_000, 40_000), 200):
        if all(_free(p) for p in (port, port + BUS_OFFSET)):
            found.append(port)
            if len(found) == count:
                return found
    raise RuntimeError("no free ports for a Redis Cluster")


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _cli(port: int, *args: str) -> str:
    done = subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True)
    return done.stdout.strip()


def _until(condition, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + UP_TIMEOUT_S
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not come up in {UP_TIMEOUT_S:g} s")
        time.sleep(0.1)
