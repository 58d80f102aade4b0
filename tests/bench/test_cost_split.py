"""The report's "Where a request's CPU goes" (bench/report.py): each process's CPU a
request pooled over the rounds — the windows' seconds over their requests, not a mean of
the windows' own figures — and the whole machine's chat/path ratio."""

from bench.report import _cost_split
from bench.results import CpuShare, Measurement, Pair


def _window(api: str, completed: int, gateway_s: float, stores_s: float, busy_s: float) -> Pair:
    cpu = CpuShare(loadgen_s=0.0, fake_s=0.0, gateway_s=gateway_s, workers_s=(gateway_s,),
                   worker_connections=(16,), machine_busy_s=busy_s, machine_capacity_s=4.0,
                   stores_s=stores_s)  # fmt: skip
    measured = Measurement(target="gateway", stream=False, concurrency=16, window_s=2.0,
                           latencies_s=[0.01] * completed, ttfbs_s=[], errors={},
                           sent=completed, upstream_calls=completed, cpu=cpu, api=api)  # fmt: skip
    return Pair(measured, measured)


def _row(lines: list[str], label: str) -> list[str]:
    cells = next(line for line in lines if f"| {label} |" in line).strip("|").split("|")
    return [cell.strip() for cell in cells]


def test_cpu_a_request_is_pooled_over_the_rounds_and_its_whole_machine_ratio_is_shown():
    # given: chat's windows cost 1,000 and 3,000 µs a request, 1,000 requests each (pooled
    # 2,000); governed's cost 2,000 µs a request in a window of 3,000 requests and 6,000 in
    # one of 1,000: pooled (6 + 6 s) / 4,000 = 3,000 — the windows' mean would be 4,000.
    pairs = [
        _window("chat", 1000, 0.8, 0.0, 1.0),
        _window("governed", 3000, 4.0, 1.5, 6.0),
        _window("chat", 1000, 2.4, 0.0, 3.0),
        _window("governed", 1000, 4.0, 1.5, 6.0),
    ]
    # when
    lines = _cost_split(pairs, "governed")
    # then
    assert _row(lines, "the whole machine")[3:] == ["2000", "3000", "+1000"]
    assert _row(lines, "Redis and PostgreSQL")[3:] == ["0", "750", "+750"]
    assert _row(lines, "chat/governed, the whole machine")[-1] == "0.67"


def test_a_run_without_the_path_or_the_stores_leaves_them_out():
    pairs = [_window("chat", 1000, 0.8, 0.0, 1.0), _window("routed", 1000, 0.9, 0.0, 1.1)]
    assert _cost_split(pairs, "governed") == []
    lines = _cost_split(pairs, "routed")
    assert not any("Redis and PostgreSQL" in line for line in lines)
    assert _row(lines, "chat/routed, the whole machine")[-1] == "0.91"
