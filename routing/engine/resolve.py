"""Request body + headers → RoutingRequest (SPEC R-MOD-1..6, R-DEC-2, R-DEC-6, D-5, D-11,
D-13, D-14). Pure: no Django, no I/O, no clock, no randomness. Everything a client can get
wrong raises ResolveError naming the exact field (HTTP 400) or UnknownModel (HTTP 404).

The model field is read right to left: a trailing routing suffix (`:nitro`, `:cheap`,
`:fast`) is stripped; an auto alias, a virtual model or an exact catalog spelling is taken as
it is; otherwise a known provider slug before the first `:` pins that provider; what remains
is normalised by routing.engine.names, so `:free`-style suffixes stay part of the id.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

from routing.engine import workload
from routing.engine.affinity.sessions import get_header
from routing.engine.language import ISO_639_1, detect
from routing.engine.names import resolve_model_name
from routing.engine.types import (
    AUTO_ALIASES,
    MAX_FALLBACK_MODELS,
    RESIDENCY_ORDER,
    TASKS,
    LatencyTarget,
    Mode,
    ProviderPrefs,
    RoutingRequest,
)

OPERATIONS = ("chat", "embeddings")
SUFFIX_MODES = {"nitro": Mode.THROUGHPUT, "cheap": Mode.PRICE, "fast": Mode.LATENCY}
SORT_MODES = ("price", "latency", "throughput")
SESSION_HEADERS = ("X-Session-Id", "Session-Id")  # before the body (SPEC R-EXE-7)
MAX_SESSION_ID_CHARS = 256
METADATA_MAX_PAIRS, METADATA_MAX_VALUE_CHARS = 16, 512  # OpenAI's limits


class ResolveError(Exception):
    """An invalid routing field: HTTP 400 with `param` naming it (`provider.order[1]`)."""

    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


class UnknownModel(Exception):
    """A model id the catalog does not know: HTTP 404 `model_not_found` (SPEC D-3)."""

    def __init__(self, model: str, param: str) -> None:
        super().__init__(f"The model `{model}` does not exist or you do not have access to it.")
        self.model = model
        self.param = param  # "model" or "models[2]"


@dataclass(frozen=True, slots=True)
class CatalogNames:
    names: Mapping[str, str]  # every accepted spelling -> canonical slug (routing.engine.names)
    providers: frozenset[str]  # provider slugs, to recognise `provider:model`
    virtual: frozenset[str] = frozenset()  # kept as the model id; the gateway expands them


@dataclass(frozen=True, slots=True)
class _ModelRef:
    model: str | None  # None for auto
    pinned_provider: str | None = None
    suffix_mode: Mode | None = None


# Value checks: each returns the cleaned value or raises ResolveError naming `param`.


def _fail(param: str, must: str) -> NoReturn:
    raise ResolveError(f"`{param}` must be {must}", param)


def _object(value: Any, param: str, keys: frozenset[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        _fail(param, "an object")
    for key in value:
        if key not in keys:
            raise ResolveError(f"`{param}.{key}` is not a known field", f"{param}.{key}")
    return value


def _bool(value: Any, param: str) -> bool:
    return value if isinstance(value, bool) else _fail(param, "a boolean")


def _number(value: Any, param: str, *, above_zero: bool = False) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (above_zero and value == 0):
        _fail(param, "a number > 0" if above_zero else "a number >= 0")
    return float(value)


def _choice(value: Any, param: str, choices: tuple[str, ...]) -> str:
    return str(value) if value in choices else _fail(param, f"one of {', '.join(choices)}")


def _strings(value: Any, param: str, *, lower: bool = True) -> tuple[str, ...]:
    """Non-empty strings, repeats dropped, order kept; slugs (`lower`) trimmed and lowercased."""
    if not isinstance(value, list):
        _fail(param, "an array of strings")
    out: dict[str, None] = {}
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            _fail(f"{param}[{index}]", "a non-empty string")
        out[item.strip().lower() if lower else item] = None
    return tuple(out)


# The `provider` object (OpenRouter-compatible; SPEC R-DEC-2, D-6, D-13, R-BEY-10).


def _sort(value: Any, param: str) -> Mode:
    if isinstance(value, Mapping):  # OpenRouter's {by, partition}; chains rank per model
        _object(value, param, frozenset({"by", "partition"}))
        if value.get("partition") is not None:
            _choice(value["partition"], f"{param}.partition", ("model",))
        value, param = value.get("by"), f"{param}.by"
    return Mode(_choice(value, param, SORT_MODES))


def _min_throughput(value: Any, param: str) -> float:
    """Tokens/s; of OpenRouter's percentile form only p50 is accepted (the one tracked)."""
    if isinstance(value, Mapping):
        value, param = _object(value, param, frozenset({"p50"})).get("p50"), f"{param}.p50"
    return _number(value, param, above_zero=True)


def _max_latency(value: Any, param: str) -> LatencyTarget | None:
    """Seconds on the wire (as OpenRouter), milliseconds in LatencyTarget; a number is p50."""
    if not isinstance(value, Mapping):
        return LatencyTarget(p50=_number(value, param, above_zero=True) * 1000)
    cuts = _object(value, param, frozenset({"p50", "p90", "p99"})).items()
    ms = {k: _number(v, f"{param}.{k}", above_zero=True) * 1000 for k, v in cuts if v is not None}
    return LatencyTarget(**ms) if ms else None


def _max_price(value: Any, param: str) -> dict[str, float]:
    """D-6: USD per 1M tokens, each optional; OpenRouter's image/request caps are refused."""
    caps = _object(value, param, frozenset({"prompt", "completion"})).items()
    return {f"max_price_{k}": _number(v, f"{param}.{k}") for k, v in caps if v is not None}


def _language_code(value: Any, param: str) -> str:
    if isinstance(value, str) and value in ISO_639_1:
        return value
    _fail(param, "a lowercase two-letter ISO 639-1 code such as `de`")


Parser = Callable[[Any, str], Any]  # (value, param) -> the cleaned value, or ResolveError
_PROVIDER_FIELDS: dict[str, Parser] = {
    "order": _strings,
    "only": lambda value, param: frozenset(_strings(value, param)),
    "ignore": lambda value, param: frozenset(_strings(value, param)),
    "regions": lambda value, param: frozenset(_strings(value, param)),  # D-13: only narrows
    "allow_fallbacks": _bool,
    "sort": _sort,
    "preferred_min_throughput": _min_throughput,
    "preferred_max_latency": _max_latency,
}
# Kept verbatim in ProviderPrefs.extra (R-BEY-10; cache_aware_routing is R-EXE-6's opt-out);
# the gateway enforces them where the catalog knows the facts.
_PROVIDER_EXTRA: dict[str, Parser] = {
    "require_parameters": _bool,
    "zdr": _bool,
    "enforce_distillable_text": _bool,
    "cache_aware_routing": _bool,
    "quantizations": lambda value, param: list(_strings(value, param, lower=False)),
    "data_collection": lambda value, param: _choice(value, param, ("allow", "deny")),
}
_PROVIDER_KEYS = frozenset({*_PROVIDER_FIELDS, *_PROVIDER_EXTRA, "max_price"})
_ROUTING_FIELDS: dict[str, Parser] = {
    "mode": lambda value, param: Mode(_choice(value, param, tuple(Mode))),
    "session_affinity": _bool,
    "task": lambda value, param: _choice(value, param, TASKS),
    "language": lambda value, param: _language_code(value, param),
}


def parse_provider(value: Any) -> ProviderPrefs:
    """The request's `provider` object; unknown keys and bad values raise ResolveError."""
    given = _object({} if value is None else value, "provider", _PROVIDER_KEYS).items()
    fields: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, item in ((k, v) for k, v in given if v is not None):  # null = not given
        if key == "max_price":
            fields.update(_max_price(item, "provider.max_price"))
        elif key in _PROVIDER_EXTRA:
            extra[key] = _PROVIDER_EXTRA[key](item, f"provider.{key}")
        else:
            fields[key] = _PROVIDER_FIELDS[key](item, f"provider.{key}")
    return ProviderPrefs(**fields, extra=extra)


def _parse_routing(value: Any) -> dict[str, Any]:
    obj = _object({} if value is None else value, "routing", frozenset(_ROUTING_FIELDS))
    fields: dict[str, Any] = dict(mode=None, session_affinity=True, task=None, language=None)
    for key, item in obj.items():
        if item is not None:
            fields[key] = _ROUTING_FIELDS[key](item, f"routing.{key}")
    return fields


# The model field (SPEC R-MOD-1, R-MOD-3..6, D-5, D-11).


def _parse_model(raw: str, catalog: CatalogNames, param: str) -> _ModelRef:
    text = raw.strip()
    head, colon, tail = text.rpartition(":")
    suffix_mode = SUFFIX_MODES.get(tail.lower()) if colon else None
    text = head.strip() if suffix_mode else text
    prefix, colon, rest = text.partition(":")
    is_name = text in catalog.names or text in catalog.virtual or text.lower() in AUTO_ALIASES
    pinned: str | None = None
    if colon and not is_name:
        wanted = prefix.strip().lower()
        pinned = next((p for p in sorted(catalog.providers) if p.lower() == wanted), None)
        text = rest.strip() if pinned else text
    if not text:
        _fail(param, "a model id")
    if text.lower() in AUTO_ALIASES:
        return _ModelRef(None, pinned, suffix_mode)
    slug = text if text in catalog.virtual else resolve_model_name(catalog.names, text)
    if slug is None:
        raise UnknownModel(raw.strip(), param)
    return _ModelRef(slug, pinned, suffix_mode)


def _parse_chain(
    body: Mapping[str, Any], catalog: CatalogNames
) -> tuple[str, _ModelRef, tuple[str, ...]]:
    """(requested model, primary, fallbacks). Without `model`, `models[0]` is the primary
    (OpenRouter). At most 8 fallback entries as sent (repeats count); resolved fallbacks then
    drop repeats and the primary. Their routing suffixes are stripped and ignored (the
    primary's mode applies to the request); they cannot pin a provider or be auto."""
    models = body.get("models")
    if models is not None and not isinstance(models, list):
        _fail("models", "an array of model ids")
    entries = [(f"models[{i}]", raw) for i, raw in enumerate(models or [])]
    for param, raw in entries:
        if not isinstance(raw, str):
            _fail(param, "a string")
    param, model = "model", body.get("model")
    if model is None and entries:
        (param, model), entries = entries[0], entries[1:]
    if not isinstance(model, str):
        _fail("model", "a model id (string)")
    if len(entries) > MAX_FALLBACK_MODELS:  # D-5: counted as sent, before any lookup
        _fail("models", f"at most {MAX_FALLBACK_MODELS} fallback models, got {len(entries)}")
    primary = _parse_model(model, catalog, param)
    fallbacks: dict[str, None] = {}
    for param, raw in entries:
        ref = _parse_model(raw, catalog, param)
        if ref.model is None or ref.pinned_provider:
            _fail(param, "a model id, not auto or `provider:model`, in a fallback chain")
        if ref.model != primary.model:
            fallbacks[ref.model] = None
    return model, primary, tuple(fallbacks)


# Session and metadata (chat only).


def session_id_of(body: Mapping[str, Any], headers: Mapping[str, str]) -> str | None:
    """SPEC R-EXE-7 order: X-Session-Id, Session-Id (case-insensitive even in a plain dict),
    then body `session_id`. The rest of that chain (prompt_cache_key, metadata ids, the hash
    of key and opening messages) needs the API key, so it is the gateway's."""
    for name in SESSION_HEADERS:
        sent = get_header(headers, name)
        if sent is not None and sent.strip():  # a blank header is no id
            return _session_id(name, sent)
    value = body.get("session_id")
    return None if value is None else _session_id("session_id", value)


def _session_id(param: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_SESSION_ID_CHARS:
        _fail(param, f"a non-empty string of at most {MAX_SESSION_ID_CHARS} characters")
    return value.strip()


def _metadata(value: Any) -> dict[str, str]:
    """OpenAI's shape: at most 16 pairs of strings, values up to 512 characters."""
    if value is None:
        return {}
    if not isinstance(value, Mapping) or len(value) > METADATA_MAX_PAIRS:
        _fail("metadata", f"an object of at most {METADATA_MAX_PAIRS} string pairs")
    for key, item in value.items():
        if not isinstance(item, str) or len(item) > METADATA_MAX_VALUE_CHARS:
            _fail(f"metadata.{key}", f"a string of at most {METADATA_MAX_VALUE_CHARS} characters")
    return dict(value)


def resolve(
    body: Mapping[str, Any],
    headers: Mapping[str, str],
    catalog: CatalogNames,
    *,
    operation: str = "chat",
    preset_mode: str | None = None,
    workspace_mode: str | None = None,
    data_class: str | None = None,
) -> RoutingRequest:
    """What one request asks of the router. Raises ResolveError (400) or UnknownModel (404).

    Mode precedence (R-MOD-5, R-DEC-6): suffix > request (`routing.mode`, else
    `provider.sort`) > preset > workspace > balanced. Configured modes are validated where
    they are written; a bad one here is a bug (ValueError). For `embeddings` only model,
    models, provider, routing and residency are read, `input` gives input_tokens, and the
    task is `routing.task` or `general`."""
    if operation not in OPERATIONS:
        raise ValueError(f"operation must be one of {OPERATIONS}, got {operation!r}")
    requested, primary, fallbacks = _parse_chain(body, catalog)
    provider = parse_provider(body.get("provider"))
    routing = _parse_routing(body.get("routing"))
    asked = {
        "suffix": primary.suffix_mode,
        "request": routing["mode"] or provider.sort,
        "preset": preset_mode,
        "workspace": workspace_mode,
    }
    mode_source = next((source for source, mode in asked.items() if mode), "default")
    mode = Mode(asked.get(mode_source) or Mode.BALANCED)
    residency = body.get("residency")
    if residency is not None:
        _choice(residency, "residency", RESIDENCY_ORDER)
    chat = operation == "chat"
    task, language = routing["task"], routing["language"]
    return RoutingRequest(
        requested_model=requested,
        model=primary.model,
        auto=primary.model is None,
        fallbacks=fallbacks,
        pinned_provider=primary.pinned_provider,
        mode=mode,
        mode_source=mode_source,
        provider=provider,
        residency=residency,
        session_id=session_id_of(body, headers) if chat else None,
        session_affinity=routing["session_affinity"],
        metadata=_metadata(body.get("metadata")) if chat else {},
        data_class=data_class,
        operation=operation,
        task=task or (workload.classify(body) if chat else "general"),
        task_source="request" if task else "classifier",
        language=language or (detect(workload.last_user_text(body)) if chat else None),
        language_source="request" if language else "detected",
        has_image=chat and workload.has_image(body),
        has_tools=chat and workload.has_tools(body),
        input_tokens=(workload.estimate_chat_tokens if chat else workload.embedding_tokens)(body),
        output_tokens=workload.requested_output_tokens(body) if chat else 0,
    )
