"""Prometheus metrics of the request path, exposed at /metrics by django-prometheus's view
(with prometheus_client's process series when one worker serves). Every series is described
in docs/observability.md, which tests/gateway/test_observability_docs.py holds to these
collectors. Labels are bounded: catalog slugs, status codes, reasons, route slugs and version
numbers only — never a workspace, key, trace or request id."""

from __future__ import annotations

from typing import Any

from prometheus_client import Counter, Gauge, Histogram

REQUESTS = Counter(
    "switchyard_requests_total",
    "Gateway requests by operation, model, provider, HTTP status and the dynamic route "
    "(slug, version; empty without one) that walked them (SPEC R-OBS-3, R-BEY-9).",
    ["operation", "model", "provider", "status", "route", "route_version"],
)
ATTEMPTS = Counter(
    "switchyard_upstream_attempts_total",
    "Upstream attempts by provider, endpoint, outcome and the dynamic route (slug, version; "
    "empty without one) of their request (SPEC R-OBS-3, R-BEY-9).",
    ["provider", "endpoint", "outcome", "route", "route_version"],
)
UPSTREAM_LATENCY = Histogram(
    "switchyard_upstream_latency_seconds",
    "Latency of successful upstream calls (whole response for non-streams).",
    ["provider"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
TIME_TO_FIRST_BYTE = Histogram(
    "switchyard_time_to_first_byte_seconds",
    "Time from the upstream call to its first content frame (streams).",
    ["provider"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
SELECTIONS = Counter(
    "switchyard_selections_total",
    "Endpoints chosen first by a routing decision, by mode (SPEC R-OBS-3).",
    ["endpoint", "mode"],
)
REJECTIONS = Counter(
    "switchyard_rejections_total",
    "Endpoints the routing filter rejected, by reason (the R-DEC-2 strings).",
    ["reason"],
)
SESSION_AFFINITY = Counter(
    "session_affinity_total",
    "Requests of a pinned session: the pin honored or released (SPEC R-EXE-7).",
    ["outcome"],
)
CACHE_AFFINITY = Counter(
    "cache_affinity_total",
    "Requests of a conversation pinned to the provider holding its prompt cache: the pin "
    "honored or released (SPEC R-EXE-6).",
    ["outcome"],
)
AUTO_CLASSIFIER = Counter(
    "switchyard_auto_classifier_total",
    "Auto-router LLM classifier calls by outcome: ok, or why the local verdict was used "
    "(SPEC R-AUTO-2).",
    ["outcome"],
)
COOLDOWNS = Counter(
    "switchyard_cooldowns_started_total",
    "Cooldowns started, by provider, endpoint and reason (SPEC R-EXE-3, R-OBS-3).",
    ["provider", "endpoint", "reason"],
)
TOKENS = Counter(
    "switchyard_tokens_total",
    "Tokens reported by upstreams, by model and kind (prompt, completion).",
    ["model", "kind"],
)

TIER_REQUESTS = Counter(
    "switchyard_tier_requests_total",
    "Requests to tiered aliases by alias, chosen tier and verdict source (SPEC R-TIER-5).",
    ["alias", "tier", "source"],
)
TIER_ESCALATIONS = Counter(
    "switchyard_tier_escalations_total",
    "Sessions newly pinned to the hard tier, by alias.",
    ["alias"],
)
ROUTE_REQUESTS = Counter(
    "switchyard_route_requests_total",
    "Requests walked by a dynamic route, by route, version and the node that ended the walk "
    "(SPEC R-ROUTE-1).",
    ["route", "version", "node"],
)
ROUTE_ROLLBACKS = Counter(
    "switchyard_route_rollbacks_total",
    "Automatic rollbacks by the rollout guard, by route and the version rolled back "
    "(SPEC R-BEY-4).",
    ["route", "version"],
)
BUDGET_ALERTS = Counter(
    "switchyard_budget_alerts_total",
    "Budget alert thresholds crossed, once per period each, by budget and threshold "
    "(SPEC R-LIM-2).",
    ["budget", "threshold"],
)
ADMISSION_REFUSALS = Counter(
    "switchyard_admission_refusals_total",
    "Requests refused at admission, by reason: budget_exceeded, rate_limited, "
    "budget_store_unavailable (SPEC R-POL-2, R-LIM-1).",
    ["reason"],
)
TIER_SCORE = Histogram(
    "switchyard_tier_score",
    "Classifier scores of tiered requests, for tuning the threshold (docs/smart-routing.md).",
    ["alias"],
    buckets=tuple(range(0, 23)),
)

# Gauges: with several workers (PROMETHEUS_MULTIPROC_DIR) in-flight counts add up across
# workers and the latency estimate shows the highest worker's (each worker learns alone).
IN_FLIGHT = Gauge(
    "switchyard_upstream_in_flight",
    "Upstream attempts in flight per model (the adaptive strategy's load, SPEC R-OBS-3).",
    ["model"],
    multiprocess_mode="livesum",
)
LATENCY_ESTIMATE = Gauge(
    "switchyard_latency_estimate_ms",
    "Peak-EWMA latency estimate per model (SPEC R-EXE-5, R-OBS-3).",
    ["model"],
    multiprocess_mode="max",
)

# Each metric's child per label values, as `labels()` returns it: prometheus_client checks
# and converts the values and takes a lock on every call (~1.6 µs; ~0.5 µs from here),
# and a request makes about ten such calls. Bounded as the children themselves are: by
# the labels' values, all from the catalog, the routes and fixed reasons.
_children: dict[tuple[Any, tuple[str, ...]], Any] = {}


def child(metric: Any, *labels: str) -> Any:
    """`metric.labels(*labels)`, kept."""
    found = _children.get((metric, labels))
    if found is None:
        found = _children[(metric, labels)] = metric.labels(*labels)
    return found
