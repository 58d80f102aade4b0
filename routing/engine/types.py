"""Values the routing engine works on. Pure: no Django, no I/O.

The gateway builds these from its configuration snapshot and its live metrics; the engine
never sees a database row, so every decision can be tested and replayed from values alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

RESIDENCY_ORDER = ("eu-owned", "eu-hosted", "any")  # narrowest first (SPEC R-DEC-4)
AUTO_ALIASES = frozenset({"auto", "switchyard/auto", "switchyard-auto", "switchyard:auto"})
MAX_FALLBACK_MODELS = 8  # SPEC R-MOD-6, D-5
# The tasks of SPEC D-14.
TASKS = (
    "general",
    "cheap",
    "code",
    "retrieval",
    "multilingual",
    "translation",
    "summarisation",
    "reasoning",
    "tool_use",
    "structured_output",
)


class Reason(StrEnum):
    """Why an endpoint was rejected, in the order the filter checks (SPEC R-DEC-2).

    The strings are the contract: traces, metrics and the console all show these.
    Request-level provider controls (TS) sit beside the policy lists they resemble.
    """

    CATALOG_ONLY = "catalog_only"
    STATUS_NOT_SERVING = "status_not_serving"
    SOVEREIGNTY_NOT_ALLOWED = "sovereignty_not_allowed"
    DATA_CLASS_NOT_CLEARED = "data_class_not_cleared"  # D-22
    REGION_NOT_ALLOWED = "region_not_allowed"
    CANNOT_GENERATE_TEXT = "cannot_generate_text"
    CANNOT_EMBED = "cannot_embed"
    PROVIDER_DENIED = "provider_denied"  # policy deny list
    PROVIDER_IGNORED = "provider_ignored"  # request provider.ignore
    PROVIDER_NOT_ALLOWED = "provider_not_allowed"  # policy allow list
    PROVIDER_NOT_IN_ONLY = "provider_not_in_only"  # request provider.only / provider:model
    PROVIDER_NOT_IN_ORDER = "provider_not_in_order"  # provider.allow_fallbacks: false
    MODEL_DENIED = "model_denied"
    MODEL_NOT_ALLOWED = "model_not_allowed"
    PARTNER_DISABLED = "partner_disabled"
    NO_VISION = "no_vision"
    CONTEXT_TOO_SMALL = "context_too_small"
    PRICE_ABOVE_CAP = "price_above_cap"


class Mode(StrEnum):
    """How a pinned model's endpoints are ordered (SPEC R-DEC-6)."""

    BALANCED = "balanced"
    PRICE = "price"
    LATENCY = "latency"
    THROUGHPUT = "throughput"


@dataclass(frozen=True, slots=True)
class EndpointInfo:
    """One catalog endpoint (provider × model × region) with its model's facts."""

    id: str
    provider: str
    model: str  # canonical slug, vendor/name
    upstream_model: str
    region: str
    status: str  # active | degraded | disabled | catalog_only
    sovereignty_class: str  # eu-owned | eu-hosted | any
    partner: bool
    price_input: float  # USD per 1M tokens
    price_output: float
    capabilities: frozenset[str]
    context_window: int
    parameters_b: float | None = None
    strong_languages: frozenset[str] = frozenset()
    task_tags: frozenset[str] = frozenset()
    documentation_completeness: float = 0.0  # 0..1
    # Catalog benchmark scores (id, 0..1), provider-reported ones already left out
    # (routing/engine/benchmarks.py `catalog_scores`); sorted by id.
    benchmarks: tuple[tuple[str, float], ...] = ()
    data_classes: frozenset[str] = frozenset()  # cleared for (D-22); empty = every class


@dataclass(frozen=True, slots=True)
class PolicyView:
    """A workspace policy as the engine reads it; empty sets mean "no restriction"."""

    allowed_residency: frozenset[str] = frozenset()
    allowed_regions: frozenset[str] = frozenset()
    provider_allow: frozenset[str] = frozenset()
    provider_deny: frozenset[str] = frozenset()
    model_allow: frozenset[str] = frozenset()
    model_deny: frozenset[str] = frozenset()
    partners: bool = False
    max_price_prompt: float | None = None  # USD per 1M tokens
    max_price_completion: float | None = None
    routing_mode: str = "balanced"
    max_attempts: int = 3
    data_classes: tuple[str, ...] = ()  # allowed, in order: the first is the default (D-22)


@dataclass(frozen=True, slots=True)
class LatencyTarget:
    """`provider.preferred_max_latency`: a number means p50; each percentile optional (ms)."""

    p50: float | None = None
    p90: float | None = None
    p99: float | None = None


@dataclass(frozen=True, slots=True)
class ProviderPrefs:
    """The request's `provider` object (OpenRouter-compatible, SPEC R-DEC-2, R-BEY-10)."""

    order: tuple[str, ...] = ()
    allow_fallbacks: bool = True
    only: frozenset[str] = frozenset()
    ignore: frozenset[str] = frozenset()
    sort: Mode | None = None  # price | latency | throughput
    max_price_prompt: float | None = None  # USD per 1M tokens (D-6)
    max_price_completion: float | None = None
    preferred_min_throughput: float | None = None  # tokens/s
    preferred_max_latency: LatencyTarget | None = None
    regions: frozenset[str] = frozenset()  # D-13: only narrows
    # Accepted verbatim for compatibility; enforced where the catalog knows the facts.
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RoutingRequest:
    """What one request asks of the router, resolved from body, headers, preset and
    workspace (routing/engine/resolve.py). `model` is the model being decided now; `fallbacks`
    the rest of the `models` chain, each decided again in turn (SPEC R-MOD-6)."""

    requested_model: str  # as the client wrote it
    model: str | None  # canonical slug; None for auto (R-MOD-1)
    auto: bool = False
    fallbacks: tuple[str, ...] = ()  # canonical slugs, at most MAX_FALLBACK_MODELS
    pinned_provider: str | None = None  # `provider:model` (R-MOD-4)
    mode: Mode = Mode.BALANCED
    mode_source: str = "default"  # suffix | request | preset | workspace | default
    provider: ProviderPrefs = field(default_factory=ProviderPrefs)
    residency: str | None = None  # eu-owned | eu-hosted | any (D-13)
    session_id: str | None = None
    session_affinity: bool = True
    metadata: dict[str, Any] = field(default_factory=dict)
    data_class: str | None = None  # D-22: None only before the resolve step sets it
    operation: str = "chat"  # chat | embeddings
    task: str = "general"
    task_source: str = "classifier"  # request | classifier
    language: str | None = None  # ISO 639-1
    language_source: str = "detected"  # request | detected
    has_image: bool = False
    has_tools: bool = False
    input_tokens: int = 0  # estimated, no tokenizer download
    output_tokens: int = 0  # requested (max_tokens / max_completion_tokens), 0 = unknown
    complexity: float | None = None  # 0..1, the auto router's classifier (R-AUTO-2)


@dataclass(frozen=True, slots=True)
class EndpointStats:
    """Live metrics of one endpoint over the rolling window (SPEC R-OBS-2)."""

    latency_p50_ms: float | None = None
    latency_p90_ms: float | None = None
    latency_p99_ms: float | None = None
    throughput_tps: float | None = None  # output tokens per second, non-streaming
    error_rate: float | None = None  # 0..1, reliability failures only (R-EXE-4)
    samples: int = 0
    rate_limited: int = 0  # 429s, counted apart from the error rate
    geo_blocked: int = 0  # 403s, counted apart from the error rate


@dataclass(frozen=True, slots=True)
class LiveState:
    """What the router knows about endpoints right now; missing data is neutral (R-DEC-8)."""

    stats: dict[str, EndpointStats] = field(default_factory=dict)
    unhealthy: frozenset[str] = frozenset()  # moved to the end, never dropped (R-DEC-7)
    cooling: frozenset[str] = frozenset()  # in cooldown: tried after every other (R-EXE-3)


@dataclass(frozen=True, slots=True)
class Factor:
    """One term of a score: the input value, its normalised form, weight, contribution."""

    name: str
    value: float | None
    normalized: float
    weight: float
    contribution: float


@dataclass(frozen=True, slots=True)
class Scored:
    endpoint_id: str
    score: float
    factors: tuple[Factor, ...] = ()
    multipliers: tuple[tuple[str, float], ...] = ()
    demoted: str | None = None  # why it was moved to the end (soft filter, unhealthy)


@dataclass(frozen=True, slots=True)
class Decision:
    ordered: tuple[EndpointInfo, ...]  # the attempt list, first choice first
    rejected: tuple[tuple[str, Reason], ...]  # (endpoint id, first failing reason)
    algorithm: str
    reason: str  # one sentence, for people (SPEC R-API-5)
    mode: Mode = Mode.BALANCED
    mode_source: str = "default"
    scored: tuple[Scored, ...] = ()  # every survivor, in attempt order
    notes: tuple[str, ...] = ()  # e.g. "residency any narrowed to the policy's eu-hosted"
    # The sentence around its endpoint ("Routed a … task with residency any" + " to <model>
    # in <region> (<class>) at <provider>" + "; N endpoints excluded, …"), so it can be
    # told again for the endpoint that really served (a pin or a failover moved it).
    reason_lead: str = ""
    reason_tail: str = ""
