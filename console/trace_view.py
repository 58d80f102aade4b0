"""The trace page and the request log's rows, for a person (SPEC R-BEY-1, R-OBS-1): pure
functions from the request log's JSON (audit/trace_log.py) to what the templates show.

No Django, no database: a template gets plain values and draws them. Nothing here adds
content — the trace holds none — and every text comes from the record, so the templates
escape it like any other value."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


def attempt_chain(attempts: Sequence[Mapping[str, Any]]) -> str:
    """The attempts at a glance: `eu-owned ✗429 → eu-hosted ✓`."""
    return " → ".join(_step(a) for a in attempts)


def _step(attempt: Mapping[str, Any]) -> str:
    where = attempt.get("provider") or attempt.get("endpoint") or "?"
    if attempt.get("status") == "ok":
        return f"{where} ✓"
    return f"{where} ✗{attempt.get('http_status') or attempt.get('status') or ''}"


@dataclass(frozen=True, slots=True)
class FactorBar:
    name: str
    value: float | None
    normalized: float | None
    weight: float | None
    contribution: float
    width: int  # percent of the widest candidate's score, in steps of 5 (CSS classes w0…w100)


@dataclass(frozen=True, slots=True)
class Candidate:
    rank: int
    endpoint: str
    score: float
    chosen: bool  # the endpoint that answered
    demoted: str | None
    factors: tuple[FactorBar, ...]
    multipliers: tuple[tuple[str, float], ...]


@dataclass(frozen=True, slots=True)
class ModelDecision:
    model: str
    mode: str
    mode_source: str
    reason: str
    notes: tuple[str, ...]
    candidates: tuple[Candidate, ...]
    excluded: tuple[tuple[str, tuple[str, ...]], ...]  # (reason, endpoints), by reason
    auto_ranking: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class AttemptBar:
    number: int
    endpoint: str
    provider: str
    ok: bool
    http_status: int | None
    latency_ms: int
    error: str
    offset: int  # percent, in steps of 5: attempts run one after the other
    width: int


@dataclass(frozen=True, slots=True)
class TracePage:
    reason: str
    decisions: tuple[ModelDecision, ...]
    attempts: tuple[AttemptBar, ...]
    route_nodes: tuple[Mapping[str, Any], ...]
    route: Mapping[str, Any]  # slug, version, terminal… of the route walked; {} for none
    tier: Mapping[str, Any] | None
    request: Mapping[str, Any]
    facts: tuple[tuple[str, str], ...] = field(default=())


def trace_page(detail: Mapping[str, Any]) -> TracePage:
    """The page of one trace, from `trace_log.detail_json`."""
    record = detail.get("decision") or {}
    answered = detail.get("endpoint") or ""
    decisions = tuple(_decision(d, answered) for d in record.get("decisions") or [])
    chosen = next((d for d in decisions if any(c.chosen for c in d.candidates)), None)
    first = chosen or (decisions[0] if decisions else None)
    route = record.get("route") or {}
    return TracePage(
        reason=first.reason if first else "",
        decisions=decisions,
        attempts=_attempts(detail.get("attempts") or []),
        route_nodes=tuple(route.get("nodes") or []),
        route=route,
        tier=record.get("tier"),
        request=record.get("request") or {},
        facts=_facts(detail),
    )


def _decision(entry: Mapping[str, Any], answered: str) -> ModelDecision:
    scored = sorted(entry.get("scored") or [], key=lambda s: -(s.get("score") or 0.0))
    widest = max((_total(s) for s in scored), default=0.0) or 1.0
    candidates = tuple(
        Candidate(
            rank=rank,
            endpoint=s.get("endpoint", ""),
            score=float(s.get("score") or 0.0),
            chosen=s.get("endpoint") == answered,
            demoted=s.get("demoted"),
            factors=tuple(_bar(f, widest) for f in s.get("factors") or []),
            multipliers=tuple(
                (m.get("name", ""), m.get("value", 1.0)) for m in s.get("multipliers") or []
            ),
        )
        for rank, s in enumerate(scored, start=1)
    )
    grouped: dict[str, list[str]] = {}
    for rejected in entry.get("rejected") or []:
        grouped.setdefault(str(rejected.get("reason", "")), []).append(rejected.get("endpoint", ""))
    return ModelDecision(
        model=entry.get("model") or "",
        mode=entry.get("mode") or "",
        mode_source=entry.get("mode_source") or "",
        reason=entry.get("reason") or "",
        notes=tuple(entry.get("notes") or []),
        candidates=candidates,
        excluded=tuple((reason, tuple(eps)) for reason, eps in sorted(grouped.items())),
        auto_ranking=entry.get("auto_ranking"),
    )


def _total(scored: Mapping[str, Any]) -> float:
    return sum(max(f.get("contribution") or 0.0, 0.0) for f in scored.get("factors") or [])


def _bar(factor: Mapping[str, Any], widest: float) -> FactorBar:
    contribution = float(factor.get("contribution") or 0.0)
    return FactorBar(
        name=factor.get("name", ""),
        value=factor.get("value"),
        normalized=factor.get("normalized"),
        weight=factor.get("weight"),
        contribution=contribution,
        width=_step5(100 * max(contribution, 0.0) / widest),
    )


def _attempts(attempts: Sequence[Mapping[str, Any]]) -> tuple[AttemptBar, ...]:
    total = sum(int(a.get("latency_ms") or 0) for a in attempts) or 1
    bars, start = [], 0
    for number, a in enumerate(attempts, start=1):
        latency = int(a.get("latency_ms") or 0)
        bars.append(
            AttemptBar(
                number=number,
                endpoint=a.get("endpoint") or "",
                provider=a.get("provider") or "",
                ok=a.get("status") == "ok",
                http_status=a.get("http_status"),
                latency_ms=latency,
                error=str(a.get("error") or ("" if a.get("status") == "ok" else a.get("status"))),
                offset=min(_step5(100 * start / total), 95),
                width=max(_step5(100 * latency / total), 5),
            )
        )
        start += latency
    return tuple(bars)


def _step5(percent: float) -> int:
    """A percentage to the nearest 5: the page's CSP allows no inline style, so bars are
    sized by classes."""
    return int(min(max(round(percent / 5) * 5, 0), 100))


def _facts(detail: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The trace's row as label/value pairs, the empty ones left out."""
    key = detail.get("api_key") or {}
    route = detail.get("route")
    pairs = [
        ("Status", f"{detail.get('status_code')} {detail.get('error_code') or ''}".strip()),
        ("Requested model", detail.get("requested_model")),
        ("Model", detail.get("model")),
        ("Provider", detail.get("provider")),
        ("Endpoint", detail.get("endpoint")),
        (
            "Operation",
            f"{detail.get('operation') or ''}{' (stream)' if detail.get('stream') else ''}",
        ),
        ("Latency", f"{detail.get('latency_ms')} ms"),
        ("Time to first byte", f"{detail['ttfb_ms']} ms" if detail.get("ttfb_ms") else ""),
        ("Tokens in / out", _tokens(detail)),
        ("Cost", f"${detail.get('cost_usd') or 0:.6f}"),
        ("Tier", detail.get("tier")),
        (
            "Route",
            f"{route} v{detail.get('route_version')} → {detail.get('route_node')}" if route else "",
        ),
        ("Session", detail.get("session_id")),
        ("API key", f"{key.get('name', '')} ({key.get('prefix', '')}…)" if key else "deleted"),
        ("Request id", detail.get("request_id")),
        ("Time (UTC)", str(detail.get("created_at") or "")[:19].replace("T", " ")),
    ]
    return tuple((label, str(value)) for label, value in pairs if value)


def _tokens(detail: Mapping[str, Any]) -> str:
    given = (detail.get("prompt_tokens"), detail.get("completion_tokens"))
    return (
        " / ".join("–" if t is None else str(t) for t in given)
        if any(t is not None for t in given)
        else ""
    )
