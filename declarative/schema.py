"""Validation of a parsed configuration file (shape in docs/configuration.md) into the
frozen values of `declarative.types`.

`parse_config` checks every field, rejects unknown keys, reads each `api_key_env` from the
environment it is handed, and checks references between sections and against what the
database already holds (passed in as `Existing`). It reports every problem at once, as
`path: message` lines in one `ConfigError`, and never returns a partly valid configuration.
This module owns the catalog sections; `config_workspaces` owns the workspace section.
Pure: no Django, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from declarative.fields import (
    MODEL_SLUG,
    NAME,
    SLUG,
    ConfigError,
    Fields,
    Issues,
    Known,
    check_unique,
    is_number,
    read_secret,
    read_timeouts,
    read_url,
)
from declarative.types import (
    Config,
    EndpointSpec,
    Existing,
    ModelSpec,
    ProviderSpec,
    VirtualModelSpec,
    Vocabulary,
)
from declarative.workspaces import parse_workspaces
from routing.engine.adaptive import OBJECTIVES
from routing.engine.names import name_index
from routing.engine.resolve import CatalogNames

__all__ = ["ConfigError", "Existing", "Vocabulary", "parse_config"]

SECTIONS = ("providers", "models", "endpoints", "virtual_models", "workspaces")
PROVIDER_KEYS = ("slug", "name", "api_style", "base_url", "api_key", "api_key_env")
MODEL_KEYS = (
    "slug",
    "aliases",
    "capabilities",
    "context_window",
    "parameters_b",
    "strong_languages",
    "task_tags",
    "documentation_completeness",
    "version",
    "benchmarks",
)
ENDPOINT_KEYS = (
    "id",
    "provider",
    "model",
    "upstream_model",
    "region",
    "base_url",
    "price",
    "status",
    "sovereignty_class",
    "partner",
    "timeouts",
    "data_classes",
)
VIRTUAL_MODEL_KEYS = ("slug", "strategy", "targets", "objective", "min_weight_fraction")
ADAPTIVE_OBJECTIVES = OBJECTIVES  # SPEC R-EXE-5, the engine's list
DEFAULT_CONTEXT_WINDOW = 8192  # the Model column's default
SLUG_HINT = "a slug (letters, digits, '-' and '_')"
NAME_HINT = "a name (letters, digits and . _ : / -, starting with a letter or digit)"


def parse_config(
    data: object,
    *,
    vocabulary: Vocabulary,
    existing: Existing | None = None,
    environ: Mapping[str, str] | None = None,
) -> Config:
    """Validate `data` (what `yaml.safe_load` returned; None for an empty file).

    Raises `ConfigError` listing every problem; otherwise every value is checked and every
    reference resolves to the file or to `existing`.
    """
    existing = existing or Existing()
    issues = Issues()
    root = Fields({} if data is None else data, "", issues, SECTIONS)
    known = Known(
        providers=existing.providers | _declared(root.raw, "providers", "slug"),
        models=existing.models | _declared(root.raw, "models", "slug"),
        virtual_models=frozenset(existing.virtual_models)
        | _declared(root.raw, "virtual_models", "slug"),
    )
    env = environ or {}
    config = Config(
        providers=_providers(root, vocabulary, env),
        models=_models(root, vocabulary),
        endpoints=_endpoints(root, vocabulary, known),
        virtual_models=_virtual_models(root, vocabulary, known, existing),
        workspaces=parse_workspaces(
            root, vocabulary, known, existing, _catalog(root.raw, known, existing), env
        ),
    )
    issues.raise_if_any()
    return config


def _catalog(raw: Mapping[Any, Any], known: Known, existing: Existing) -> CatalogNames:
    """What a route may name: every spelling of the database's and the file's models
    (slug, aliases, unique bare name), their providers and virtual models."""
    aliases = dict(existing.aliases)
    entries = raw.get("models")
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, Mapping) and isinstance(entry.get("slug"), str):
            listed = entry.get("aliases")
            aliases[entry["slug"]] = (
                tuple(a for a in listed if isinstance(a, str)) if isinstance(listed, list) else ()
            )
    for slug in known.models:
        aliases.setdefault(slug, ())
    return CatalogNames(
        names=name_index(aliases.items()),
        providers=known.providers,
        virtual=known.virtual_models,
    )


def _declared(raw: Mapping[Any, Any], section: str, key: str) -> frozenset[str]:
    entries = raw.get(section)
    if not isinstance(entries, list):
        return frozenset()
    return frozenset(
        entry[key]
        for entry in entries
        if isinstance(entry, Mapping) and isinstance(entry.get(key), str)
    )


def _providers(
    root: Fields, vocabulary: Vocabulary, environ: Mapping[str, str]
) -> tuple[ProviderSpec, ...]:
    specs = []
    for path, raw in root.items("providers", default=()):
        fields = Fields(raw, path, root.issues, PROVIDER_KEYS)
        slug = fields.text("slug", pattern=SLUG, hint=SLUG_HINT, max_length=64)
        specs.append(
            ProviderSpec(
                slug=slug,
                name=fields.text("name", default=slug),
                api_style=fields.choice("api_style", vocabulary.api_styles, default="openai"),
                base_url=read_url(fields, "base_url"),
                api_key=read_secret(fields, environ, required=False),
            )
        )
    check_unique(root.issues, [(f"providers[{i}].slug", s.slug) for i, s in enumerate(specs)])
    return tuple(specs)


def _models(root: Fields, vocabulary: Vocabulary) -> tuple[ModelSpec, ...]:
    specs = []
    for path, raw in root.items("models", default=()):
        fields = Fields(raw, path, root.issues, MODEL_KEYS)
        specs.append(
            ModelSpec(
                slug=fields.text("slug", pattern=MODEL_SLUG, hint="vendor/name (SPEC D-11)"),
                aliases=fields.texts("aliases"),
                capabilities=fields.texts("capabilities", choices=vocabulary.capabilities)
                if fields.has("capabilities")
                else ("text",),
                context_window=fields.integer("context_window", default=DEFAULT_CONTEXT_WINDOW),
                parameters_b=fields.number(
                    "parameters_b", default=None, nullable=True, exclusive_minimum=True
                ),
                strong_languages=fields.texts("strong_languages"),
                task_tags=fields.texts("task_tags"),
                documentation_completeness=fields.number(
                    "documentation_completeness", default=0.0, maximum=1.0
                )
                or 0.0,
                version=fields.text("version", default="", max_length=64),
                benchmarks=_benchmarks(fields),
            )
        )
    check_unique(root.issues, [(f"models[{i}].slug", s.slug) for i, s in enumerate(specs)])
    return tuple(specs)


def _benchmarks(fields: Fields) -> dict[str, Any]:
    """`{id: score}` or `{id: {score, source}}`; a score is 0..1 or a percentage. A score
    with `source: provider` is kept in the catalog but never ranks (R-AUTO-3)."""
    scores: dict[str, Any] = {}
    for path, name, value in fields.entries("benchmarks"):
        score, source = value, None
        if isinstance(value, Mapping):
            score, source = value.get("score"), value.get("source")
            extra = set(value) - {"score", "source"}
            if extra:
                fields.issues.add(path, f"unknown key {sorted(extra)[0]!r} (score, source)")
                continue
            if source is not None and not isinstance(source, str):
                fields.issues.add(f"{path}.source", "must be a string")
                continue
        if not is_number(score) or not 0 <= score <= 100:
            fields.issues.add(path, "must be a score from 0 to 1 (or a percentage)")
            continue
        scores[name] = score if source is None else {"score": score, "source": source}
    return scores


def _endpoints(root: Fields, vocabulary: Vocabulary, known: Known) -> tuple[EndpointSpec, ...]:
    specs = []
    for path, raw in root.items("endpoints", default=()):
        fields = Fields(raw, path, root.issues, ENDPOINT_KEYS)
        endpoint_id = fields.text("id", pattern=NAME, hint=NAME_HINT)
        provider = fields.text("provider", max_length=64)
        known.check(fields, "provider", provider, "provider")
        model = fields.text("model")
        known.check(fields, "model", model, "model")
        price_input, price_output = _price(fields)
        specs.append(
            EndpointSpec(
                id=endpoint_id,
                provider=provider,
                model=model,
                upstream_model=fields.text("upstream_model"),
                region=fields.text("region", max_length=64),
                base_url=read_url(fields, "base_url", required=False),
                price_input=price_input,
                price_output=price_output,
                status=fields.choice("status", vocabulary.endpoint_statuses, default="active"),
                sovereignty_class=fields.choice(
                    "sovereignty_class", vocabulary.sovereignty_classes, default="any"
                ),
                partner=fields.flag("partner", default=False),
                timeouts=read_timeouts(fields),
                data_classes=fields.texts("data_classes"),
            )
        )
    check_unique(root.issues, [(f"endpoints[{i}].id", s.id) for i, s in enumerate(specs)])
    return tuple(specs)


def _price(fields: Fields) -> tuple[Decimal, Decimal]:
    """`price: {input, output}`, both required, USD per 1M tokens."""
    price = fields.child("price", ("input", "output"))
    if price is None:
        fields.error("price", "is required")
        return Decimal(0), Decimal(0)
    return price.money("input") or Decimal(0), price.money("output") or Decimal(0)


def _virtual_models(
    root: Fields, vocabulary: Vocabulary, known: Known, existing: Existing
) -> tuple[VirtualModelSpec, ...]:
    specs = []
    for path, raw in root.items("virtual_models", default=()):
        fields = Fields(raw, path, root.issues, VIRTUAL_MODEL_KEYS)
        slug = fields.text("slug", pattern=NAME, hint=NAME_HINT)
        if slug in known.models:
            fields.error("slug", f"{slug!r} is already a model slug")
        targets = []
        for target_path, target_raw in fields.items("targets"):
            target = Fields(target_raw, target_path, root.issues, ("model", "weight"))
            model = target.text("model")
            known.check(target, "model", model, "target")
            weight = target.number("weight", default=1, exclusive_minimum=True)
            targets.append({"model": model, "weight": weight})
        if fields.has("targets") and not targets and isinstance(fields.raw["targets"], list):
            fields.error("targets", "must name at least one model")
        strategy = fields.choice("strategy", vocabulary.virtual_strategies, default="round_robin")
        specs.append(
            VirtualModelSpec(
                slug=slug,
                strategy=strategy,
                targets=tuple(targets),
                adaptive=_adaptive_options(fields, strategy),
            )
        )
    check_unique(root.issues, [(f"virtual_models[{i}].slug", s.slug) for i, s in enumerate(specs)])
    _check_cycles(root.issues, specs, existing)
    return tuple(specs)


def _adaptive_options(fields: Fields, strategy: str) -> dict[str, Any]:
    """`objective` and `min_weight_fraction` of an adaptive virtual model (R-EXE-5)."""
    options: dict[str, Any] = {}
    for key in ("objective", "min_weight_fraction"):
        if fields.has(key) and strategy != "adaptive":
            fields.error(key, "only applies to strategy adaptive")
            return {}
    if fields.has("objective"):
        options["objective"] = fields.choice("objective", ADAPTIVE_OBJECTIVES)
    if fields.has("min_weight_fraction"):
        options["min_weight_fraction"] = fields.number("min_weight_fraction", maximum=1.0)
    return options


def _check_cycles(issues: Issues, specs: list[VirtualModelSpec], existing: Existing) -> None:
    """A virtual model may target another, but never (through others) itself."""
    graph = dict(existing.virtual_models)
    graph.update({spec.slug: tuple(t["model"] for t in spec.targets) for spec in specs})
    for index, spec in enumerate(specs):
        stack: list[tuple[str, tuple[str, ...]]] = [(spec.slug, (spec.slug,))]
        seen: set[str] = set()
        while stack:
            node, trail = stack.pop()
            if spec.slug in graph.get(node, ()):
                cycle = " → ".join((*trail, spec.slug))
                issues.add(f"virtual_models[{index}].targets", f"cycle {cycle}")
                break
            for nxt in graph.get(node, ()):
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, (*trail, nxt)))
