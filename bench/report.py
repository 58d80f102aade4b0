"""Rendering a benchmark run as Markdown: machine facts, method, the fake upstream alone,
direct vs gateway with the issue's bars, CPU shares, memory, and every error seen."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence

from bench.results import Measurement, Pair, Verdict
from bench.run import BenchReport, load_name

# A client process using more of a core than this may be what limits the rate.
LOADGEN_SATURATED_PCT = 85.0
# The fake upstream alone should serve at least this many times the gateway's rate.
FAKE_HEADROOM_MIN = 2.0
# Busy time beyond our processes above this (% of one core) means someone else was busy.
OTHERS_NOTICEABLE_PCT = 25.0


def render(report: BenchReport) -> str:
    return "\n".join(
        [
            *_heading(report),
            *_fake_alone(report.fake_alone),
            *_comparison(report.pairs, report.verdicts),
            *(
                line
                for api, title, what in OTHER_PATHS
                for line in _path_vs_chat(report.pairs, api, title, what)
            ),
            *_lean(report.lean),
            *(line for api in COSTED_PATHS for line in _cost_split(report.pairs, api)),
            *_cpu(report.pairs),
            *_memory(report),
            *_bars(report.verdicts),
            *_warnings(report),
            *_errors(report),
        ]
    )


def _heading(report: BenchReport) -> list[str]:
    options, gw = report.options, report.options.gateway
    facts = ", ".join(f"{name} {value}" for name, value in report.facts.items())
    conc = ", ".join(str(c) for c in options.concurrencies)
    return [
        f"## Switchyard benchmark: {gw.server}, {gw.workers} workers, {gw.transport} transport",
        "",
        f"Machine and code: {facts}.",
        "",
        f"Method: fake upstream (profile fast, 20-token replies, streams of 20 chunks) and the"
        f" gateway on 127.0.0.1, sharing the machine with the load generator (aiohttp,"
        f" closed loop, one connection per client). Concurrency {conc}; each scenario"
        f" {options.warmup_s:g} s warm-up, then a {options.duration_s:g} s window. Latency is"
        f" the whole response or stream; TTFB is the response head (non-stream) or the first"
        f" `data:` line (stream). Errors count non-200s, streams without `[DONE]` and"
        f" transport failures, warm-up included.",
        "",
    ]


def _fake_alone(measurements: Sequence[Measurement]) -> list[str]:
    rows = [
        "### Fake upstream alone (sanity) and load-generator ceiling",
        "",
        "| mode | conc | req/s | p50 ms | p99 ms | TTFB p50 ms | errors | loadgen CPU %"
        " | loadgen µs/req | loadgen ceiling req/s/core | fake CPU % | fake µs/req |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for m in measurements:
        loadgen_us = m.cpu_us_per_request(m.cpu.loadgen_s)
        rows.append(
            f"| {m.mode} | {m.concurrency} | {_n(m.rate_per_s, 0)} | {_n(m.p50_ms)}"
            f" | {_n(m.p99_ms)} | {_n(m.ttfb_p50_ms)} | {m.error_count}"
            f" | {_pct(m, m.cpu.loadgen_s)} | {_n(loadgen_us, 0)} | {_n(1e6 / loadgen_us, 0)}"
            f" | {_pct(m, m.cpu.fake_s)} | {_n(m.cpu_us_per_request(m.cpu.fake_s), 0)} |"
        )
    return [*rows, ""]


def _comparison(pairs: Sequence[Pair], verdicts: Sequence[Verdict]) -> list[str]:
    bars = {v.scenario: v for v in verdicts if v.scenario}
    rows = [
        "### Direct vs gateway",
        "",
        "| mode | conc | direct /s | gateway /s | gw/direct | p50 direct ms | p50 gw ms"
        " | added p50 ms | p99 direct ms | p99 gw ms | TTFB direct ms | TTFB gw ms"
        " | added TTFB ms | errors direct/gw | bar |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|",
    ]
    for p in pairs:
        d, g = p.direct, p.gateway
        bar = bars.get((g.stream, g.concurrency)) if g.api == "chat" else None
        rows.append(
            f"| {g.mode} | {g.concurrency} | {_n(d.rate_per_s, 0)} | {_n(g.rate_per_s, 0)}"
            f" | {_n(p.rate_ratio)} | {_n(d.p50_ms)} | {_n(g.p50_ms)}"
            f" | {_n(p.added_p50_ms, 2, '+')} | {_n(d.p99_ms)} | {_n(g.p99_ms)}"
            f" | {_n(d.ttfb_p50_ms)} | {_n(g.ttfb_p50_ms)}"
            f" | {_n(p.added_ttfb_ms, 2, '+')} | {d.error_count}/{g.error_count}"
            f" | {bar.result if bar else ''} |"
        )
    return [*rows, ""]


# The other paths measured beside plain chat, each against the same direct run: (api, the
# table's title, what it shows).
OTHER_PATHS = (
    (
        "messages",
        "Messages vs chat through the gateway",
        "The Anthropic Messages path: the translation's cost (SPEC R-API-9; the bar is 10 %).",
    ),
    (
        "native",
        "Messages to an Anthropic-style upstream vs chat through the gateway",
        "The same Messages request to the fake answering as an Anthropic provider: sent as "
        "written and relayed as it comes, no translation (R-API-9).",
    ),
    (
        "routed",
        "A three-node route vs no route",
        "The same chat request from a key with a dynamic route attached (condition, split, "
        "model; SPEC R-ROUTE-1): the route's cost (the bar is +0.3 ms at c1, 5 % throughput).",
    ),
    (
        "governed",
        "A budget and rate limits vs none",
        "The same chat request from a key with a daily budget and requests, tokens and "
        "concurrency limits it never reaches (docs/budgets.md): admission's cost — reserve, "
        "settle, limits taken and given back (the bar is 85 % throughput at c16, +0.5 ms at "
        "c1, on PostgreSQL + Redis: `--store postgres-redis`).",
    ),
)


def _path_vs_chat(pairs: Sequence[Pair], api: str, title: str, what: str) -> list[str]:
    """Another path against plain chat of the same round, same direct baseline, same run;
    with several rounds, a median row per scenario closes them."""
    chat = {
        (p.gateway.stream, p.gateway.concurrency, p.round): p
        for p in pairs
        if p.gateway.api == "chat"
    }
    others = [p for p in pairs if p.gateway.api == api]
    if not others:
        return []
    rows = [
        f"### {title}",
        "",
        what,
        "",
        f"| mode | conc | round | chat /s | {api} /s | {api}/chat | added p50 chat ms"
        f" | added p50 {api} ms | gateway µs/req chat | gateway µs/req {api}"
        f" | errors chat/{api} |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    by_scenario: dict[tuple[bool, int], list[tuple[Pair, Pair]]] = {}
    for m in others:
        c = chat.get((m.gateway.stream, m.gateway.concurrency, m.round))
        if c is not None:
            by_scenario.setdefault((m.gateway.stream, m.gateway.concurrency), []).append((c, m))
    for matched in by_scenario.values():
        for c, m in matched:
            rows.append(
                f"| {c.gateway.mode} | {m.gateway.concurrency} | {m.round + 1}"
                f" | {_n(c.gateway.rate_per_s, 0)} | {_n(m.gateway.rate_per_s, 0)}"
                f" | {_n(_ratio(m, c))} | {_n(c.added_p50_ms, 2, '+')}"
                f" | {_n(m.added_p50_ms, 2, '+')} | {_n(_gateway_us(c), 0)}"
                f" | {_n(_gateway_us(m), 0)} | {c.gateway.error_count}/{m.gateway.error_count} |"
            )
        if len(matched) > 1:
            c, m = matched[0]
            rows.append(
                f"| {c.gateway.mode} | {m.gateway.concurrency} | median"
                f" | {_n(_median(c.gateway.rate_per_s for c, _ in matched), 0)}"
                f" | {_n(_median(m.gateway.rate_per_s for _, m in matched), 0)}"
                f" | {_n(_median(_ratio(m, c) for c, m in matched))}"
                f" | {_n(_median(c.added_p50_ms for c, _ in matched), 2, '+')}"
                f" | {_n(_median(m.added_p50_ms for _, m in matched), 2, '+')}"
                f" | {_n(_median(_gateway_us(c) for c, _ in matched), 0)}"
                f" | {_n(_median(_gateway_us(m) for _, m in matched), 0)} | |"
            )
    return [*rows, ""]


COSTED_PATHS = ("routed", "governed")  # the paths whose bars are throughput at c16
COST_ROLES = (
    ("gateway_s", "the gateway"),
    ("stores_s", "Redis and PostgreSQL"),
    ("loadgen_s", "the load generator"),
    ("fake_s", "the fake upstream"),
    ("others_s", "the rest of the machine"),
    ("machine_busy_s", "the whole machine"),
)


def _cost_split(pairs: Sequence[Pair], api: str) -> list[str]:
    """Each role's CPU a completed request, `api` against chat, pooled over the rounds
    (the windows' CPU seconds over their requests). With the machine busy (c16), chat's
    machine cost over the path's is the throughput ratio the path's extra work allows: a
    second reading of the rates' ratio (a 2-s window's rate moves by ±15 % here), and one
    that says which process the difference is in."""
    windows: dict[tuple[bool, int, str], list[Measurement]] = {}
    for p in pairs:
        if p.gateway.api in ("chat", api):
            key = (p.gateway.stream, p.gateway.concurrency, p.gateway.api)
            windows.setdefault(key, []).append(p.gateway)
    scenarios = sorted({(stream, conc) for stream, conc, a in windows if a == api})
    if not scenarios:
        return []
    stores = any(m.cpu.stores_s for ms in windows.values() for m in ms)
    roles = [(name, label) for name, label in COST_ROLES if stores or name != "stores_s"]
    rows = [
        f"### Where a request's CPU goes: {api} against chat",
        "",
        "µs of CPU a completed request, pooled over the rounds. At c16 the machine is "
        f"busy: chat/{api} of the whole machine is the throughput ratio {api}'s extra "
        "work allows.",
        "",
        f"| mode | conc | CPU of | chat | {api} | {api} − chat |",
        "|---|--:|---|--:|--:|--:|",
    ]
    for stream, conc in scenarios:
        chat, other = windows.get((stream, conc, "chat"), []), windows[(stream, conc, api)]
        for name, label in roles:
            a, b = _pooled_us(chat, name), _pooled_us(other, name)
            rows.append(
                f"| {load_name(stream)} | {conc} | {label} | {_n(a, 0)} | {_n(b, 0)}"
                f" | {_n(b - a, 0, '+')} |"
            )
        whole = _pooled_us(other, "machine_busy_s")
        ratio = _pooled_us(chat, "machine_busy_s") / whole if whole else math.nan
        rows.append(
            f"| {load_name(stream)} | {conc} | chat/{api}, the whole machine | | | {_n(ratio)} |"
        )
    return [*rows, ""]


def _pooled_us(windows: Sequence[Measurement], role: str) -> float:
    completed = sum(m.completed for m in windows)
    spent = sum(getattr(m.cpu, role) for m in windows)
    return spent / completed * 1e6 if completed else math.nan


def _lean(rounds: Sequence[dict[str, float]]) -> list[str]:
    """Each chat path's added p50 at c1 from the lean client, per round, the paths in
    alternating blocks (bench/lean.py); the other paths also as a difference from chat."""
    if not rounds:
        return []
    apis = list(rounds[0])
    others = [api for api in apis if api != "chat"]
    rows = [
        "### Added latency at c1, lean client",
        "",
        "One httpx connection a path, non-stream requests in turn, the paths and the fake "
        "upstream alternating in blocks of 50 (bench/lean.py); the fake's own p50 "
        "subtracted. ms.",
        "",
        "| round | "
        + " | ".join(f"added p50 {api}" for api in apis)
        + "".join(f" | {api} − chat" for api in others)
        + " |",
        "|---" * (1 + len(apis) + len(others)) + "|",
    ]
    for index, added in enumerate(rounds):
        rows.append(_lean_row(str(index + 1), added, others))
    if len(rounds) > 1:
        median = {api: _median(r[api] for r in rounds) for api in apis}
        diffs = {api: _median(r[api] - r["chat"] for r in rounds) for api in others}
        rows.append(_lean_row("median", median, others, diffs))
    return [*rows, ""]


def _lean_row(
    label: str, added: dict[str, float], others: list[str], diffs: dict[str, float] | None = None
) -> str:
    """`diffs`: the other paths' differences from chat, when not taken from `added` (a
    median row shows the median of the rounds' differences)."""
    diff = diffs or {api: added[api] - added["chat"] for api in others}
    cells = [_n(v, 3, "+") for v in added.values()] + [_n(diff[api], 3, "+") for api in others]
    return f"| {label} | " + " | ".join(cells) + " |"


def _ratio(other: Pair, chat: Pair) -> float:
    rate = chat.gateway.rate_per_s
    return other.gateway.rate_per_s / rate if rate else math.nan


def _gateway_us(pair: Pair) -> float:
    return pair.gateway.cpu_us_per_request(pair.gateway.cpu.gateway_s)


def _median(values: Iterable[float]) -> float:
    return statistics.median(values)


def _cpu(pairs: Sequence[Pair]) -> list[str]:
    rows = [
        "### CPU during the window (% of one core) and per request",
        "",
        "| mode | conc | target | loadgen % | fake % | gateway % | per worker % (conns)"
        " | stores % | others % | machine busy % | loadgen µs/req | gateway µs/req"
        " | upstream calls/req |",
        "|---|--:|---|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|",
    ]
    # Another path's pair shares its direct run with the chat pair before it: listed once.
    measured = [
        m
        for p in pairs
        for m in ((p.direct, p.gateway) if p.gateway.api == "chat" else (p.gateway,))
    ]
    for m in measured:
        gateway_us = m.cpu_us_per_request(m.cpu.gateway_s) if m.target == "gateway" else math.nan
        calls = m.upstream_calls / m.sent if m.sent else math.nan
        rows.append(
            f"| {m.mode} | {m.concurrency} | {m.target} | {_pct(m, m.cpu.loadgen_s)}"
            f" | {_pct(m, m.cpu.fake_s)} | {_pct(m, m.cpu.gateway_s)}"
            f" | {_per_worker(m)} | {_pct(m, m.cpu.stores_s)}"
            f" | {_pct(m, m.cpu.others_s)} | {_n(m.cpu.machine_busy_pct, 0)}"
            f" | {_n(m.cpu_us_per_request(m.cpu.loadgen_s), 0)} | {_n(gateway_us, 0)}"
            f" | {_n(calls, 3)} |"
        )
    return [*rows, ""]


def _per_worker(m: Measurement) -> str:
    """`61 (16) + 2 (0)`: each worker's CPU % and, through the gateway, its connections."""
    if m.target != "gateway":
        return " + ".join(_pct(m, s) for s in m.cpu.workers_s)
    shares = zip(m.cpu.workers_s, m.cpu.worker_connections, strict=False)
    return " + ".join(f"{_pct(m, s)} ({conns})" for s, conns in shares)


def _memory(report: BenchReport) -> list[str]:
    rows = [
        "### Gateway memory (VmRSS, MB)",
        "",
        "| when | server process | workers | workers sum | total |",
        "|---|--:|---|--:|--:|",
    ]
    for sample in report.rss:
        workers = ", ".join(f"{mb:.1f}" for mb in sample.workers_mb)
        rows.append(
            f"| {sample.label} | {sample.master_mb:.1f} | {workers}"
            f" | {sum(sample.workers_mb):.1f} | {sample.total_mb:.1f} |"
        )
    return [*rows, ""]


def _bars(verdicts: Sequence[Verdict]) -> list[str]:
    rows = ["### Bars", "", "| bar | measured | result |", "|---|---|---|"]
    rows += [f"| {v.bar} | {v.measured} | {v.result} |" for v in verdicts]
    return [*rows, ""]


def _warnings(report: BenchReport) -> list[str]:
    """Say so when the numbers may be limited by the bench rather than the gateway."""
    notes = []
    alone = {m.stream: m for m in report.fake_alone}
    for p in report.pairs:
        g = p.gateway
        if g.cpu.loadgen_s / g.window_s * 100 > LOADGEN_SATURATED_PCT:
            notes.append(
                f"- {g.mode} c{g.concurrency}: the load generator used"
                f" {_pct(g, g.cpu.loadgen_s)} % of a core; it may limit the gateway's rate."
            )
        fake = alone.get(g.stream)
        if fake and fake.rate_per_s < FAKE_HEADROOM_MIN * g.rate_per_s:
            notes.append(
                f"- {g.mode} c{g.concurrency}: the fake upstream alone served only"
                f" {fake.rate_per_s:.0f}/s, under {FAKE_HEADROOM_MIN:g}x the gateway's"
                f" {g.rate_per_s:.0f}/s."
            )
    for m in (*report.fake_alone, *(m for p in report.pairs for m in (p.direct, p.gateway))):
        if m.cpu.others_s / m.window_s * 100 > OTHERS_NOTICEABLE_PCT:
            notes.append(
                f"- {m.mode} c{m.concurrency} {m.target}: {_pct(m, m.cpu.others_s)} % of a core"
                " went to other processes; this run's numbers are pessimistic."
            )
    return ["### Warnings", "", *notes, ""] if notes else []


def _errors(report: BenchReport) -> list[str]:
    measured = [*report.fake_alone, *(m for p in report.pairs for m in (p.direct, p.gateway))]
    failing = [m for m in measured if m.error_count]
    if not failing:
        return ["No errors in any scenario.", ""]
    rows = ["### Errors", ""]
    for m in failing:
        kinds = ", ".join(f"{kind} x{count}" for kind, count in sorted(m.errors.items()))
        rows.append(f"- {m.mode} c{m.concurrency} {m.target}: {kinds}")
        rows += [f"    - `{sample}`" for sample in m.error_samples]
    if report.gateway_log_tail:
        rows += ["", "Gateway log (last lines):", "", "```", report.gateway_log_tail, "```"]
    return [*rows, ""]


def _pct(m: Measurement, cpu_s: float) -> str:
    return _n(cpu_s / m.window_s * 100, 0) if m.window_s else "-"


def _n(value: float, digits: int = 2, sign: str = "") -> str:
    if math.isnan(value) or math.isinf(value):
        return "-"
    return f"{value:{sign}.{digits}f}"
