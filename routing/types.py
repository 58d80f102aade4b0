"""Values the routing engine works on. Pure: no Django, no I/O.

The gateway builds these from its configuration snapshot; the engine never sees a
database row, so every decision can be tested and replayed from values alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Reason(StrEnum):
    """Why an endpoint was rejected, in the order the filter checks (SPEC R-DEC-2).

    The strings are the contract: traces, metrics and the console all show these.
    """

    CATALOG_ONLY = "catalog_only"
    STATUS_NOT_SERVING = "status_not_serving"
    SOVEREIGNTY_NOT_ALLOWED = "sovereignty_not_allowed"
    REGION_NOT_ALLOWED = "region_not_allowed"
    CANNOT_GENERATE_TEXT = "cannot_generate_text"
    CANNOT_EMBED = "cannot_embed"
    PROVIDER_DENIED = "provider_denied"
    PROVIDER_NOT_ALLOWED = "provider_not_allowed"
    MODEL_DENIED = "model_denied"
    MODEL_NOT_ALLOWED = "model_not_allowed"
    PARTNER_DISABLED = "partner_disabled"
    NO_VISION = "no_vision"
    CONTEXT_TOO_SMALL = "context_too_small"
    PRICE_ABOVE_CAP = "price_above_cap"


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


@dataclass(frozen=True, slots=True)
class RouteRequest:
    """What the request needs from an endpoint."""

    model: str  # canonical slug
    operation: str = "chat"  # chat | embeddings
    has_image: bool = False
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Decision:
    ordered: tuple[EndpointInfo, ...]  # the attempt list, first choice first
    rejected: tuple[tuple[str, Reason], ...]  # (endpoint id, first failing reason)
    algorithm: str
    reason: str  # one sentence, for people
    scores: dict[str, float] = field(default_factory=dict)
