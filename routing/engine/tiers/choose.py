"""Smart tier routing (SPEC §5, D-8, D-9): a deterministic classifier that scores a request
easy or hard, and the choice of a tiered alias's target from that verdict, the override
headers and the session pin. Pure: no model call, no Django, no I/O, no clock (`now` is
passed in).

This module is the one definition of the workspace's `smart_routing` shape: its keys, tiers,
limits and defaults below. `manage.py apply` (declarative/workspaces.py) validates a file
against them and stores the JSON as written; `tier_config` reads it and supplies the
defaults. The points are GM's published table; the calibration cases of R-TIER-2 are tests
(tests/routing/test_tiers.py), and docs/smart-routing.md explains each signal and how to
tune the threshold.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, TypeGuard

from routing.engine.affinity.sessions import get_header
from routing.engine.tiers.pins import HARD, TierPinStore, pin_key
from routing.engine.workload import iter_messages, last_user_text, message_text

EASY = "easy"
TIERS = (EASY, HARD)
SMART_ROUTING_KEYS = ("threshold", "session_ttl_s", "effort_keywords", "aliases")
ALIAS_KEYS = (*TIERS, "default")  # `{easy: target, hard: target, default: tier}`
MIN_THRESHOLD = 1  # points; at 0 every request would be hard
DEFAULT_THRESHOLD = 4  # points; a score at or above it is hard
DEFAULT_SESSION_TTL_S = 1800  # 30 min without a request ends a hard pin (sliding)
# Matched as case-insensitive substrings of the latest user message (D-9), so every default
# is a phrase: a single word such as "prove" would also match "improve".
DEFAULT_EFFORT_KEYWORDS: tuple[str, ...] = (
    "think hard",  # also "think harder"
    "think carefully",
    "think deeply",
    "ultrathink",
    "step by step",
    "step-by-step",
    "root cause",
    "deep dive",
)

SMART_ROUTING_HEADER = "X-Switchyard-Smart-Routing"
TIER_HEADER = "X-Switchyard-Tier"

# GM's published table (R-TIER-2), in points.
EFFORT_KEYWORD_POINTS = 4
CODE_POINTS = 3
TOOLS_POINTS = 2
MANY_TOOLS = 5  # declared tools at which MANY_TOOLS_POINTS more are added
MANY_TOOLS_POINTS = 2
STRUCTURED_OUTPUT_POINTS = 2
ATTACHMENT_POINTS = 2
# (characters of all message text, points added at or above): +1 at 2k, +2 at 8k, +3 at 32k.
CONTEXT_STEPS = ((2_000, 1), (8_000, 2), (32_000, 3))
DEEP_THREAD_MESSAGES = 7
DEEP_THREAD_POINTS = 1

# reasoning_effort values, lowest first; HARD_EFFORT and above go to hard at once.
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
HARD_EFFORT = "medium"
# Anthropic `thinking.type` values that ask for extended thinking ("disabled" does not).
THINKING_TYPES = frozenset({"enabled", "adaptive"})
# Content part types that are attachments, and what the detail calls them.
ATTACHMENT_KINDS = {
    "image_url": "image",
    "input_image": "image",
    "image": "image",
    "file": "file",
    "input_file": "file",
    "document": "file",
    "input_audio": "audio",
    "audio": "audio",
}

CODE_FENCE = "```"
# Diagnostics besides a fenced block; the first that matches names the signal. Anchored at a
# line start where prose could otherwise contain the words ("don't panic: ...").
DIAGNOSTICS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("diff --git", re.compile(r"^diff --git ", re.MULTILINE)),
    ("unified diff hunk", re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@", re.MULTILINE)),
    ("Python traceback", re.compile(r"Traceback \(most recent call last\)")),
    ("Go panic", re.compile(r"^panic: ", re.MULTILINE)),
    ("Rust panic", re.compile(r"^thread '[^'\n]*' panicked at ", re.MULTILINE)),
    (
        "stack frame",
        re.compile(
            r'^[ \t]*File "[^"\n]+", line \d+'  # Python
            r"|^[ \t]+at [\w$.<>/]+\([\w$.-]+:\d+\)"  # Java, Kotlin, Scala
            # JavaScript: the location must hold a "/" or "." (a path, not a clock time)
            r"|^[ \t]+at (?:[^\n()]+ \()?(?=[^\s()]*[/.])[^\s()]+:\d+:\d+\)?[ \t]*$",
            re.MULTILINE,
        ),
    ),
)


@dataclass(frozen=True, slots=True)
class TierAlias:
    name: str
    easy: str  # target model or virtual model slug
    hard: str
    default: str  # "easy" | "hard": the tier with smart routing off (D-8)


@dataclass(frozen=True, slots=True)
class TierConfig:
    aliases: Mapping[str, TierAlias]
    threshold: int
    session_ttl_s: float
    effort_keywords: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Signal:
    name: str  # stable, lowercase: effort_keyword, code, tools, ... (headers, metrics)
    points: int
    detail: str  # for people: "effort keyword 'root cause'", "8,412 characters"


@dataclass(frozen=True, slots=True)
class Verdict:
    tier: str  # "easy" | "hard"
    score: int  # the classifier's points; the threshold for "immediate"; 0 for "off"
    signals: tuple[Signal, ...]
    source: str  # "classifier" | "immediate" | "pinned" | "forced" | "off"


def tier_config(raw: Mapping[str, Any] | None) -> TierConfig | None:
    """The workspace's `smart_routing` JSON as stored, with defaults for absent keys; None
    when no alias is configured (the feature is idle, R-TIER-1).

    The stored JSON was validated on apply; anything malformed is still read defensively:
    an alias without string `easy` and `hard` targets is skipped (its name then passes
    through unchanged), a bad `default` is easy, a bad threshold or TTL is the default.
    An explicit `effort_keywords` list replaces the defaults (an empty list turns the signal
    off); blank keywords are dropped, since "" is a substring of every message."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("aliases"), Mapping):
        return None
    aliases = {}
    for name, entry in raw["aliases"].items():
        alias = _tier_alias(name, entry)
        if alias is not None:
            aliases[name] = alias
    if not aliases:
        return None
    threshold = raw.get("threshold")
    ttl_s = raw.get("session_ttl_s")
    keywords = raw.get("effort_keywords")
    return TierConfig(
        aliases=MappingProxyType(aliases),
        threshold=(
            threshold if _is_int(threshold) and threshold >= MIN_THRESHOLD else DEFAULT_THRESHOLD
        ),
        session_ttl_s=(
            float(ttl_s)
            if (_is_int(ttl_s) or isinstance(ttl_s, float)) and ttl_s > 0
            else DEFAULT_SESSION_TTL_S
        ),
        effort_keywords=(
            tuple(k for k in keywords if isinstance(k, str) and k.strip())
            if isinstance(keywords, list)
            else DEFAULT_EFFORT_KEYWORDS
        ),
    )


def classify(body: Mapping[str, Any], config: TierConfig) -> Verdict:
    """R-TIER-2: hard at once when the request asks for reasoning (`reasoning_effort` or
    OpenRouter's `reasoning.effort` at `medium` or above, or an Anthropic `thinking` block
    of type enabled/adaptive), reported with the threshold as its score. Otherwise the sum
    of the signals' points; a score at or above the threshold is hard."""
    immediate = _asks_for_reasoning(body)
    if immediate is not None:
        signal = Signal(immediate[0], config.threshold, immediate[1])
        return Verdict(HARD, config.threshold, (signal,), "immediate")
    messages = list(iter_messages(body))
    found = (
        _effort_keyword(last_user_text(body), config.effort_keywords),
        _code(messages),
        _tools(body),
        _structured_output(body),
        _attachments(messages),
        _context(messages),
        _depth(messages),
    )
    signals = tuple(signal for signal in found if signal is not None)
    score = sum(signal.points for signal in signals)
    return Verdict(HARD if score >= config.threshold else EASY, score, signals, "classifier")


def choose_tier(
    alias: TierAlias,
    body: Mapping[str, Any],
    headers: Mapping[str, str],
    config: TierConfig,
    pins: TierPinStore,
    session_key: str | None,
    now: float,
) -> tuple[Verdict, str]:
    """The verdict for a request to a tiered alias and the model slug it is rewritten to.

    - `X-Switchyard-Tier: easy|hard` forces that tier (source "forced"; the score and
      signals are still the classifier's, so the response shows what was overridden,
      unless smart routing is also off: then score 0 and no signals).
    - else `X-Switchyard-Smart-Routing: off` takes the alias's default tier (D-8) without
      classifying (source "off", score 0, no signals).
    - else the classifier decides; a hard verdict pins the session hard, and a live hard
      pin turns an easy verdict hard (source "pinned"). Either way the pin's TTL slides.
    Forced and off requests neither read, create nor slide the pin. Header values are
    case-insensitive; any other value of either header raises ValueError (a 400).
    Without a session key nothing is pinned."""
    forced = _header_choice(headers, TIER_HEADER, TIERS, "X-Switchyard-Tier must be easy or hard")
    smart = _header_choice(
        headers,
        SMART_ROUTING_HEADER,
        ("on", "off"),
        "X-Switchyard-Smart-Routing must be on or off",
    )
    if forced is not None and smart == "off":
        verdict = Verdict(forced, 0, (), "forced")
    elif forced is not None:
        verdict = replace(classify(body, config), tier=forced, source="forced")
    elif smart == "off":
        verdict = Verdict(alias.default, 0, (), "off")
    else:
        verdict = _pinned(classify(body, config), alias, config, pins, session_key, now)
    return verdict, alias.hard if verdict.tier == HARD else alias.easy


def verdict_headers(verdict: Verdict) -> dict[str, str]:
    """The verdict as response headers (R-TIER-4). Reasons carry signal names and points
    only (ASCII, bounded); the details go to the trace."""
    reasons = ", ".join(f"{signal.name}+{signal.points}" for signal in verdict.signals)
    return {
        "X-Switchyard-Tier": verdict.tier,
        "X-Switchyard-Tier-Score": str(verdict.score),
        "X-Switchyard-Tier-Source": verdict.source,
        "X-Switchyard-Tier-Reasons": reasons or "none",
    }


def _pinned(
    verdict: Verdict,
    alias: TierAlias,
    config: TierConfig,
    pins: TierPinStore,
    session_key: str | None,
    now: float,
) -> Verdict:
    """Apply the upward-only session pin (R-TIER-3)."""
    if session_key is None:
        return verdict
    key = pin_key(alias.name, session_key)
    if verdict.tier == HARD:
        pins.pin_hard(key, now, config.session_ttl_s)
        return verdict
    if pins.get(key, now) == HARD:
        pins.touch(key, now, config.session_ttl_s)
        return replace(verdict, tier=HARD, source="pinned")
    return verdict


def _header_choice(
    headers: Mapping[str, str], name: str, choices: tuple[str, ...], error: str
) -> str | None:
    value = get_header(headers, name)
    if value is None:
        return None
    choice = value.strip().lower()
    if choice not in choices:
        raise ValueError(error)
    return choice


def _tier_alias(name: Any, entry: Any) -> TierAlias | None:
    if not isinstance(name, str) or not isinstance(entry, Mapping):
        return None
    easy, hard, default = entry.get("easy"), entry.get("hard"), entry.get("default")
    if not (isinstance(easy, str) and easy and isinstance(hard, str) and hard):
        return None
    return TierAlias(name, easy, hard, default if default in TIERS else EASY)


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _asks_for_reasoning(body: Mapping[str, Any]) -> tuple[str, str] | None:
    """(signal name, detail) when the request explicitly asks for reasoning."""
    reasoning = body.get("reasoning")
    efforts = (
        ("reasoning_effort", body.get("reasoning_effort")),
        ("reasoning.effort", reasoning.get("effort") if isinstance(reasoning, Mapping) else None),
    )
    for field, effort in efforts:
        level = effort.strip().lower() if isinstance(effort, str) else ""
        if level in REASONING_EFFORTS[REASONING_EFFORTS.index(HARD_EFFORT) :]:
            return "reasoning_effort", f"{field} '{level}'"
    thinking = body.get("thinking")
    if not isinstance(thinking, Mapping):
        return None
    kind, budget = thinking.get("type"), thinking.get("budget_tokens")
    if not (isinstance(kind, str) and kind in THINKING_TYPES):
        return None
    budget_note = f" ({budget:,} token budget)" if _is_int(budget) else ""
    return "thinking", f"thinking {kind}{budget_note}"


def _effort_keyword(text: str, keywords: tuple[str, ...]) -> Signal | None:
    """The first configured keyword found in the latest user message (D-9)."""
    folded = text.casefold()
    for keyword in keywords:
        if keyword.casefold() in folded:
            return Signal("effort_keyword", EFFORT_KEYWORD_POINTS, f"effort keyword '{keyword}'")
    return None


def _code(messages: list[Mapping[str, Any]]) -> Signal | None:
    """Code or diagnostics in any message's text: a fenced block (two ``` markers), else the
    first of DIAGNOSTICS that matches. Messages are scanned in order; the first hit counts."""
    for number, message in enumerate(messages, start=1):
        text = message_text(message)
        if text.count(CODE_FENCE) >= 2:
            return Signal("code", CODE_POINTS, f"fenced code block in message {number}")
        for kind, pattern in DIAGNOSTICS:
            if pattern.search(text):
                return Signal("code", CODE_POINTS, f"{kind} in message {number}")
    return None


def _tools(body: Mapping[str, Any]) -> Signal | None:
    tools = body.get("tools")
    count = len(tools) if isinstance(tools, list) else 0
    if count == 0:
        return None
    points = TOOLS_POINTS + (MANY_TOOLS_POINTS if count >= MANY_TOOLS else 0)
    return Signal("tools", points, f"{count} tool{'s' if count > 1 else ''} declared")


def _structured_output(body: Mapping[str, Any]) -> Signal | None:
    response_format = body.get("response_format")
    if not isinstance(response_format, Mapping) or response_format.get("type") != "json_schema":
        return None
    schema = response_format.get("json_schema")
    name = schema.get("name") if isinstance(schema, Mapping) else None
    detail = "response_format json_schema" + (f" '{name}'" if isinstance(name, str) else "")
    return Signal("structured_output", STRUCTURED_OUTPUT_POINTS, detail)


def _attachments(messages: list[Mapping[str, Any]]) -> Signal | None:
    counts = {"image": 0, "file": 0, "audio": 0}
    for message in messages:
        content = message.get("content")
        for part in content if isinstance(content, list) else ():
            part_type = part.get("type") if isinstance(part, Mapping) else None
            kind = ATTACHMENT_KINDS.get(part_type) if isinstance(part_type, str) else None
            if kind is not None:
                counts[kind] += 1
    if not any(counts.values()):
        return None
    detail = ", ".join(f"{n} {kind}{'s' if n > 1 else ''}" for kind, n in counts.items() if n)
    return Signal("attachments", ATTACHMENT_POINTS, detail)


def _context(messages: list[Mapping[str, Any]]) -> Signal | None:
    """Characters of all message text, every role (D-9): string content and text parts."""
    chars = sum(len(message_text(message)) for message in messages)
    points = sum(step for at_least, step in CONTEXT_STEPS if chars >= at_least)
    return Signal("context", points, f"{chars:,} characters") if points else None


def _depth(messages: list[Mapping[str, Any]]) -> Signal | None:
    count = len(messages)
    if count < DEEP_THREAD_MESSAGES:
        return None
    return Signal("depth", DEEP_THREAD_POINTS, f"{count} messages")
