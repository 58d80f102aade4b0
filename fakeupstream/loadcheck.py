"""Throughput check of the fake alone: `python -m fakeupstream.loadcheck`.

Starts a fake upstream subprocess (`fast` profile), drives it from this process with
aiohttp at each concurrency, for non-stream and 20-chunk stream chat completions, and
prints a Markdown table: requests/s, latency percentiles, and the server's CPU time per
request (from /proc), which stays meaningful when the load generator is the bottleneck.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from dataclasses import dataclass

import aiohttp
import uvloop

from fakeupstream.process import running_fake_upstream

BODY = {"model": "bench", "messages": [{"role": "user", "content": "Say something short."}]}
HEADERS = {"Authorization": "Bearer sk-bench"}


@dataclass(frozen=True, slots=True)
class Result:
    mode: str
    concurrency: int
    requests: int
    elapsed_s: float
    latencies_ms: list[float]
    server_cpu_s: float

    def row(self) -> str:
        ordered = sorted(self.latencies_ms)
        p50, p99 = (ordered[int(q * (len(ordered) - 1))] for q in (0.5, 0.99))
        rate = self.requests / self.elapsed_s
        cpu_us = 1e6 * self.server_cpu_s / self.requests
        return (
            f"| {self.mode} | {self.concurrency} | {rate:,.0f} | {p50:.2f} | {p99:.2f} "
            f"| {cpu_us:.0f} | {1e6 / cpu_us:,.0f} |"
        )


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process, from /proc (Linux)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def one_request(session: aiohttp.ClientSession, url: str, stream: bool) -> None:
    async with session.post(url, json={**BODY, "stream": stream}, headers=HEADERS) as response:
        if response.status != 200:
            raise RuntimeError(f"status {response.status}")
        if not stream:
            await response.read()
            return
        events = 0
        async for line in response.content:
            events += line.startswith(b"data: ")
        if events != 22:  # 20 tokens + finish chunk + [DONE]
            raise RuntimeError(f"stream had {events} events")


async def measure(url: str, pid: int, stream: bool, concurrency: int, duration_s: float) -> Result:
    latencies_ms: list[float] = []
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(one_request(session, url, stream) for _ in range(concurrency)))

        async def worker(stop_at: float) -> None:
            while (started := time.perf_counter()) < stop_at:
                await one_request(session, url, stream)
                latencies_ms.append(1000 * (time.perf_counter() - started))

        cpu_before, began = process_cpu_s(pid), time.perf_counter()
        await asyncio.gather(*(worker(began + duration_s) for _ in range(concurrency)))
        elapsed_s = time.perf_counter() - began
        server_cpu_s = process_cpu_s(pid) - cpu_before
    mode = "stream (20 chunks)" if stream else "non-stream"
    return Result(mode, concurrency, len(latencies_ms), elapsed_s, latencies_ms, server_cpu_s)


async def run_all(url: str, pid: int, concurrencies: list[int], duration_s: float) -> None:
    _emit("| mode | concurrency | req/s | p50 ms | p99 ms | server CPU µs/req | req/s per core |")
    _emit("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for stream in (False, True):
        for concurrency in concurrencies:
            result = await measure(url, pid, stream, concurrency, duration_s)
            _emit(result.row())


def _emit(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m fakeupstream.loadcheck")
    parser.add_argument("--concurrency", default="16,64", help="comma-separated (16,64)")
    parser.add_argument("--duration-s", type=float, default=5.0, help="per measurement (5)")
    args = parser.parse_args()
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    with running_fake_upstream("fast") as fake:
        url = f"{fake.base_url}/chat/completions"
        uvloop.run(run_all(url, fake.process.pid, concurrencies, args.duration_s))
    _emit(f"(python {sys.version.split()[0]}, {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
