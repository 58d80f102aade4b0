"""What an auto-routed request is and how hard it is (SPEC R-AUTO-2, PH): the workload mix,
the complexity (the least capability a reliable answer needs, 0..1) and the confidence.

Two sources, one verdict shape:
- `classify_locally` — deterministic and in process: the workload rules of
  routing/engine/workload.py for the mix, the smart-tier signals of
  routing/engine/tiers/choose.py (GM's points
  table) for the complexity. Always available; the fallback for the other.
- the LLM classifier — a child request the gateway sends to a cheap model
  (gateway/request_path/resolve/auto.py). `classifier_body` builds it from the request: the
  trusted facts (tools, structured output, attachments, size) plus an excerpt of the
  conversation; `parse_classifier_reply` accepts only a JSON document of the schema below
  and returns None for anything else, so the caller falls back to the local verdict. The
  classifier reports a mix, a complexity and a confidence — never a model.

Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from routing.engine import workload
from routing.engine.tiers import choose as tiers
from routing.engine.workload import iter_messages, message_text

WORKLOADS = (
    "code",
    "reasoning",
    "tool_use",
    "structured_output",
    "translation",
    "summarisation",
    "general",
)
# Tier points at which a request counts as fully complex: GM's table tops out around 12
# (keyword 4 + code 3 + many tools 4 + a 32k context 6 …); 10 is already an extreme request.
COMPLEXITY_FULL_POINTS = 10.0
# An explicit reasoning request (reasoning_effort ≥ medium, a thinking block) is at least this.
REASONING_COMPLEXITY = 0.7
# Confidence of the local classifier: a workload read from the body's structure (tools, a
# response schema) is a fact; one phrase match is a good guess; competing matches or no
# match at all (general) are weak.
CONFIDENCE_STRUCTURAL = 0.9
CONFIDENCE_ONE_MATCH = 0.75
CONFIDENCE_SEVERAL = 0.55
CONFIDENCE_NONE = 0.4
EXCERPT_CHARS = 6000  # of conversation text sent to the LLM classifier


@dataclass(frozen=True, slots=True)
class WorkloadVerdict:
    task: str  # the main workload, one of WORKLOADS
    mix: tuple[tuple[str, float], ...]  # workload → share, shares summing to 1
    complexity: float  # 0..1
    confidence: float  # 0..1
    source: str  # "local" | "llm"
    signals: tuple[str, ...] = ()  # names of the signals read (never content)

    def as_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "mix": dict(self.mix),
            "complexity": round(self.complexity, 3),
            "confidence": round(self.confidence, 3),
            "source": self.source,
            "signals": list(self.signals),
        }


_DEFAULT_TIERS = tiers.TierConfig(
    aliases={},
    threshold=tiers.DEFAULT_THRESHOLD,
    session_ttl_s=tiers.DEFAULT_SESSION_TTL_S,
    effort_keywords=tiers.DEFAULT_EFFORT_KEYWORDS,
)


def classify_locally(body: Mapping[str, Any]) -> WorkloadVerdict:
    matched = workload.matching_workloads(body)
    task = matched[0] if matched else "general"
    structural = task in ("tool_use", "structured_output")
    if structural:
        confidence = CONFIDENCE_STRUCTURAL
    elif not matched:
        confidence = CONFIDENCE_NONE
    else:
        confidence = CONFIDENCE_ONE_MATCH if len(matched) == 1 else CONFIDENCE_SEVERAL
    shares = matched or ("general",)
    verdict = tiers.classify(body, _DEFAULT_TIERS)
    if verdict.source == "immediate":
        complexity = REASONING_COMPLEXITY
    else:
        complexity = min(1.0, verdict.score / COMPLEXITY_FULL_POINTS)
    return WorkloadVerdict(
        task=task,
        mix=tuple((name, round(1.0 / len(shares), 3)) for name in shares),
        complexity=complexity,
        confidence=confidence,
        source="local",
        signals=tuple(signal.name for signal in verdict.signals),
    )


CLASSIFIER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "workloads": {
            "type": "object",
            "properties": {
                name: {"type": "number", "minimum": 0, "maximum": 1} for name in WORKLOADS
            },
            "required": list(WORKLOADS),
            "additionalProperties": False,
        },
        "complexity": {"type": "number", "minimum": 0, "maximum": 1},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["workloads", "complexity", "confidence"],
    "additionalProperties": False,
}

_INSTRUCTIONS = (
    "You classify requests for an LLM router. Do not answer the request. Reply with JSON "
    "only: `workloads` gives each workload's share of the request (0..1: code, reasoning, "
    "tool_use, structured_output, translation, summarisation, general), `complexity` the "
    "least model capability a reliable answer needs (0 trivial, 1 frontier), `confidence` "
    "how sure you are (0..1). The facts listed first are true; never name a model."
)


def classifier_body(body: Mapping[str, Any], model: str, max_tokens: int = 200) -> dict[str, Any]:
    """The child request's Chat Completions body (no streaming, strict schema)."""
    messages = list(iter_messages(body))
    texts = [f"{m.get('role', 'user')}: {message_text(m)}" for m in messages]
    conversation = "\n".join(texts)
    if len(conversation) > EXCERPT_CHARS:
        half = EXCERPT_CHARS // 2
        conversation = f"{conversation[:half]}\n[…]\n{conversation[-half:]}"
    facts = {
        "tools_declared": len(body.get("tools") or ())
        if isinstance(body.get("tools"), list)
        else 0,
        "structured_output": workload.asks_for_structure(body),
        "images": sum(workload.count_images(m) for m in messages),
        "messages": len(messages),
        "characters": sum(len(message_text(m)) for m in messages),
    }
    return {
        "model": model,
        "messages": [
            {"role": "system", "content": _INSTRUCTIONS},
            {
                "role": "user",
                "content": f"Facts: {orjson.dumps(facts).decode()}\n\nRequest:\n{conversation}",
            },
        ],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "workload", "strict": True, "schema": CLASSIFIER_SCHEMA},
        },
        "max_tokens": max_tokens,
        "temperature": 0,
    }


def parse_classifier_reply(content: Any, local: WorkloadVerdict) -> WorkloadVerdict | None:
    """The classifier's verdict, or None when the reply is not exactly the schema. The
    local verdict's signals are kept (they are facts about the body either way)."""
    if not isinstance(content, str):
        return None
    try:
        document = orjson.loads(content)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(document, dict) or set(document) != {"workloads", "complexity", "confidence"}:
        return None
    shares = document["workloads"]
    if not isinstance(shares, dict) or set(shares) != set(WORKLOADS):
        return None
    values = [shares[name] for name in WORKLOADS]
    complexity, confidence = document["complexity"], document["confidence"]
    if not all(_unit(v) for v in (*values, complexity, confidence)) or sum(values) <= 0:
        return None
    total = sum(values)
    mix = tuple((name, round(shares[name] / total, 3)) for name in WORKLOADS if shares[name] > 0)
    task = max(WORKLOADS, key=lambda name: shares[name])  # ties: the earlier in WORKLOADS
    return WorkloadVerdict(
        task=task,
        mix=mix,
        complexity=float(complexity),
        confidence=float(confidence),
        source="llm",
        signals=local.signals,
    )


def _unit(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1
