"""Fake-provider settings: the knobs one fake upstream runs with and the built-in profiles.

A profile is a named set of defaults; command-line flags override single values of it.
Everything here is plain data, so the server, the CLI and the tests share one definition.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

# A reply longer than this is cut: a client asking for max_tokens=10**9 must not make the
# fake allocate gigabytes. Real models stop far earlier anyway.
MAX_REPLY_TOKENS = 100_000


class CacheMode(StrEnum):
    """How prompt-cache reads are reported in `usage`."""

    NONE = "none"  # never report cached tokens
    ALWAYS = "always"  # every prompt token but the last counts as cached
    REPEAT = "repeat"  # cached when this process saw the same first message before


@dataclass(frozen=True, slots=True)
class FakeSettings:
    """The behaviour of one fake provider; every field is also a CLI flag."""

    name: str = "fast"  # shown in the reply text
    latency_ms: float = 0.0  # added before the response head of non-stream replies
    ttft_ms: float = 0.0  # time to first token of a stream
    tokens_per_s: float = 0.0  # stream pacing after the first token; 0 = unpaced
    error_rate: Mapping[int, float] = field(default_factory=dict)  # HTTP status -> probability
    retry_after_s: int = 1  # Retry-After header on 429 answers
    reply_tokens: int = 20  # reply length when the request sets no max_tokens
    cached_tokens: CacheMode = CacheMode.NONE
    seed: int = 0  # seeds the error-rate draws, so runs repeat
    api_key: str | None = None  # when set, the only accepted credential
    models: tuple[str, ...] = ()  # served model ids; empty = accept any model


PROFILES: Mapping[str, FakeSettings] = {
    "fast": FakeSettings(name="fast"),
    "slow": FakeSettings(name="slow", latency_ms=300.0, ttft_ms=200.0, tokens_per_s=50.0),
    "flaky": FakeSettings(name="flaky", error_rate={503: 0.3, 429: 0.1}),
    "cached": FakeSettings(name="cached", cached_tokens=CacheMode.REPEAT),
}


def parse_error_rate(text: str) -> dict[int, float]:
    """Parse `503=0.1,429=0.05` into {503: 0.1, 429: 0.05}; an empty string means none.

    Raises ValueError when a status is not an HTTP error code, a probability lies outside
    [0, 1], or the probabilities add up to more than 1.
    """
    rates: dict[int, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        status_text, sep, rate_text = item.partition("=")
        if not sep:
            raise ValueError(f"expected STATUS=PROBABILITY, got {item!r}")
        status, rate = int(status_text), float(rate_text)
        if not 400 <= status <= 599:
            raise ValueError(f"status {status} is not an HTTP error status (400-599)")
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"probability {rate} for {status} is outside [0, 1]")
        rates[status] = rate
    if sum(rates.values()) > 1.0:
        raise ValueError("error probabilities add up to more than 1")
    return rates


def resolve_settings(profile: str, overrides: Mapping[str, Any]) -> FakeSettings:
    """The named profile with every non-None override applied.

    `name` defaults to the profile's name. Raises KeyError for an unknown profile and
    ValueError for an override that is not a FakeSettings field.
    """
    base = PROFILES[profile]
    given = {key: value for key, value in overrides.items() if value is not None}
    unknown = set(given) - set(FakeSettings.__dataclass_fields__)
    if unknown:
        raise ValueError(f"unknown settings: {', '.join(sorted(unknown))}")
    if "cached_tokens" in given:
        given["cached_tokens"] = CacheMode(given["cached_tokens"])
    if "models" in given:
        given["models"] = tuple(given["models"])
    return replace(base, **given)
