"""docs/observability.md and docs/grafana/switchyard.json cannot drift from
gateway/metrics.py (SPEC R-OBS-3): every series the gateway defines is documented with
exactly its labels, and every series the dashboard queries is one that is exposed."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.metrics import MetricWrapperBase

from gateway import metrics

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "observability.md"
DASHBOARD = ROOT / "docs" / "grafana" / "switchyard.json"
# The suffixes each kind of collector is exposed with (prometheus_client's text format).
EXPOSED_SUFFIXES = {
    "counter": ("_total",),
    "histogram": ("_bucket", "_sum", "_count"),
    "gauge": ("",),
}
# PromQL words that look like a metric name but are not one.
PROMQL_KEYWORDS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right",
                             "offset", "bool", "and", "or", "unless"})  # fmt: skip
SERIES_HEADING = re.compile(r"^### `([a-z_:]+)` \((counter|histogram|gauge)\)$", re.MULTILINE)


def _collectors() -> list[MetricWrapperBase]:
    found = [v for v in vars(metrics).values() if isinstance(v, MetricWrapperBase)]
    assert metrics.REQUESTS in found  # the module's collectors were found at all
    return found


def _exposed_name(collector: MetricWrapperBase) -> str:
    """The series name a page shows: a counter's `_name` has no `_total`."""
    return collector._name + ("_total" if collector._type == "counter" else "")


def _doc_sections() -> dict[str, tuple[str, str]]:
    """Each `### \\`name\\` (type)` section of the doc: name -> (type, body)."""
    text = DOC.read_text()
    headings = list(SERIES_HEADING.finditer(text))
    sections: dict[str, tuple[str, str]] = {}
    for index, heading in enumerate(headings):
        end = headings[index + 1].start() if index + 1 < len(headings) else len(text)
        body = text[heading.end() : end].split("\n## ", 1)[0]
        sections[heading.group(1)] = (heading.group(2), body)
    return sections


def _doc_process_series() -> set[str]:
    """The process/runtime series the doc lists (its `## Process and runtime series`)."""
    section = DOC.read_text().split("## Process and runtime series", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^- `([a-z_:]+)` \(", section, flags=re.MULTILINE))


def _dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


def _metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: what remains once strings, label
    matchers, range selectors, grouping clauses and function calls are taken out."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    expr = re.sub(r"\{[^}]*\}", "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)
    grouping = r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)"
    expr = re.sub(grouping, "", expr)
    tokens = re.findall(r"(?<![\w$.:])([a-zA-Z_:][\w:]*)(?![\w:])(?!\s*\()", expr)
    return {token for token in tokens if token not in PROMQL_KEYWORDS}


def _dashboard_exprs() -> list[str]:
    dashboard = _dashboard()
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", []) if "expr" in t]
    for variable in dashboard["templating"]["list"]:
        query = variable.get("query")
        text = query.get("query", "") if isinstance(query, dict) else str(query or "")
        exprs.extend(re.findall(r"label_values\(\s*([a-zA-Z_:][\w:]*)", text))
    return exprs


@pytest.mark.parametrize("collector", _collectors(), ids=lambda c: c._name)
def test_r_obs_3_every_series_is_documented_with_exactly_its_labels(collector):
    # given the series as /metrics shows it
    name = _exposed_name(collector)
    sections = _doc_sections()
    # then the doc has its section, of its type, listing each of its labels and no other
    assert name in sections, f"docs/observability.md has no `### \\`{name}\\`` section"
    kind, body = sections[name]
    assert kind == collector._type
    documented = re.findall(r"^- `([a-z_]+)`:", body, flags=re.MULTILINE)
    assert documented == list(collector._labelnames)
    # and it names the SPEC ids it serves
    assert re.search(r"Serves\s[^.]*R-[A-Z]+-\d+", body), f"{name} names no SPEC id"


def test_r_obs_3_the_doc_describes_no_series_the_gateway_does_not_define():
    defined = {_exposed_name(c) for c in _collectors()}
    assert set(_doc_sections()) == defined


def test_r_obs_3_the_dashboard_queries_only_exposed_series():
    # given every sample name the gateway exposes, and the process series the doc lists
    exposed = {
        collector._name + suffix
        for collector in _collectors()
        for suffix in EXPOSED_SUFFIXES[collector._type]
    }
    process = _doc_process_series()
    assert "process_resident_memory_bytes" in process
    # when every PromQL expression of the dashboard is read
    used = {name for expr in _dashboard_exprs() for name in _metric_names(expr)}
    # then each name it reads is one of them
    assert used, "the dashboard reads no metric at all"
    assert used - exposed - process == set()
    # and the request path's core series are on it
    assert {"switchyard_requests_total", "switchyard_upstream_latency_seconds_bucket"} <= used


def test_r_obs_3_every_dashboard_panel_has_a_title_and_a_query():
    dashboard = _dashboard()
    assert dashboard["schemaVersion"] >= 39
    assert [i["name"] for i in dashboard["__inputs"]] == ["DS_PROMETHEUS"]
    assert {v["name"] for v in dashboard["templating"]["list"]} >= {"provider", "route"}
    assert dashboard["panels"]
    for panel in dashboard["panels"]:
        assert panel.get("title"), panel
        assert panel.get("targets"), panel["title"]
        assert all(t.get("expr") for t in panel["targets"]), panel["title"]
        assert panel["datasource"]["uid"] == "${DS_PROMETHEUS}", panel["title"]
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ('sum by (status) (rate(switchyard_requests_total{route=~"$route"}[5m]))',
         {"switchyard_requests_total"}),
        ("histogram_quantile(0.99, sum by (le, provider) (rate(a_bucket[$__rate_interval])))",
         {"a_bucket"}),
        ('sum(rate(x_total{status=~"5.."}[1m])) / sum(rate(x_total[1m]))', {"x_total"}),
        ("max by (model) (g) or on (model) h offset 5m", {"g", "h"}),
    ],
)  # fmt: skip
def test_r_obs_3_metric_names_are_read_out_of_promql(expr, expected):
    assert _metric_names(expr) == expected
