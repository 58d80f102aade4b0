"""What the load generator samples at the edges of its window: the CPU seconds of each
process of the benchmark and of the whole machine, and how the gateway's workers split
the client connections between them."""

from __future__ import annotations

import time
from dataclasses import dataclass

from bench.procs import (
    ProcessTree,
    cpu_seconds,
    established_connections,
    machine_busy_s,
    store_cpu_seconds,
)


@dataclass(frozen=True, slots=True)
class Probe:
    fake_pid: int
    cpus: int
    gateway: ProcessTree | None = None
    gateway_port: int = 0
    stores: bool = False  # also Redis's and PostgreSQL's CPU (the gateway's stores)

    def cpu_seconds(self) -> dict[str, float]:
        """CPU seconds so far: "loadgen" (this process), "fake", "gateway" (all of its
        processes), "machine" (busy time of all CPUs), "stores" (Redis and PostgreSQL, when asked;
        else 0) and "worker NNN" for each worker."""
        spent = {
            "loadgen": time.process_time(),
            "fake": cpu_seconds(self.fake_pid),
            "gateway": 0.0,
            "machine": machine_busy_s(),
            "stores": store_cpu_seconds() if self.stores else 0.0,
        }
        if self.gateway:
            for index, pid in enumerate(self.gateway.workers):
                spent[f"worker {index:03d}"] = cpu_seconds(pid)
            spent["gateway"] = sum(cpu_seconds(pid) for pid in self.gateway.all_pids)
        return spent

    def worker_connections(self) -> tuple[int, ...]:
        """Established client connections each gateway worker holds right now."""
        if not self.gateway:
            return ()
        return established_connections(self.gateway_port, self.gateway.workers)
