"""Validation of the `workspaces` section: each workspace with its policy, BYOK
credentials, smart tier routing, auto router, presets, key settings
(declarative/key_settings.py) and dynamic routes (declarative/routes.py).

A nested section that is absent stays None (or empty) so that `apply` leaves what is
stored alone; a section that is present describes the whole of it, and its absent fields
take their defaults. `smart_routing` and `auto_router` are stored as given (only the keys
present, plus the classifier's `timeout_ms`), and the engine modules reading them own their
shape: keys, allowed values, limits and defaults come from routing/engine/tiers/choose.py
and routing/engine/auto/settings.py, the retention format from workspaces/retention.py.
Pure: no Django, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from declarative.budgets import LIMIT_KEYS, parse_budgets, parse_limits
from declarative.fields import (
    MODEL_SLUG,
    SLUG,
    Fields,
    Issues,
    Known,
    check_unique,
    is_json,
    read_secret,
    read_timeouts,
    to_micros,
)
from declarative.key_settings import parse_keys
from declarative.routes import parse_routes
from declarative.types import (
    CredentialSpec,
    Existing,
    PolicySpec,
    PresetSpec,
    Secret,
    Vocabulary,
    WorkspaceSpec,
)
from routing.engine.auto import settings as auto
from routing.engine.resolve import CatalogNames
from routing.engine.tiers import choose as tiers
from workspaces.retention import DEFAULT_RETENTION, RETENTION, RETENTION_HINT

WORKSPACE_KEYS = (
    "slug",
    "name",
    "policy",
    "credentials",
    "smart_routing",
    "auto_router",
    "presets",
    "keys",
    "routes",
    "budgets",
    "limits",
)
POLICY_KEYS = (
    "allowed_residency",
    "allowed_regions",
    "provider_allow",
    "provider_deny",
    "model_allow",
    "model_deny",
    "partners",
    "max_price",
    "retention",
    "data_classes",
    "daily_budget",
    "routing_mode",
    "max_attempts",
    "timeouts",
    "cooldown",
)
CREDENTIAL_KEYS = ("provider", "api_key", "api_key_env", "models", "managed_fallback")
PRESET_KEYS = (
    "slug",
    "allowed_models",
    "provider_allow",
    "provider_ignore",
    "default_prompt",
    "default_params",
)
MAX_ATTEMPTS_LIMIT = 32767  # the column is a PositiveSmallIntegerField
MAX_PROMPT_CHARS = 100_000
DAILY_BUDGET_MAX_USD = 1e12  # as micro-dollars still far inside the BigIntegerField


def parse_workspaces(
    root: Fields,
    vocabulary: Vocabulary,
    known: Known,
    existing: Existing,
    catalog: CatalogNames,
    environ: Mapping[str, str],
) -> tuple[WorkspaceSpec, ...]:
    """`catalog`: the names a route may use, the file's and the database's."""
    specs = []
    for path, raw in root.items("workspaces", default=()):
        fields = Fields(raw, path, root.issues, WORKSPACE_KEYS)
        slug = fields.text("slug", pattern=SLUG, hint="a slug", max_length=64)
        presets = _presets(fields)
        preset_slugs = {p.slug for p in presets} | existing.presets.get(slug, frozenset())
        routes = parse_routes(fields, catalog)
        route_slugs = {r.slug for r in routes} | existing.routes.get(slug, frozenset())
        specs.append(
            WorkspaceSpec(
                slug=slug,
                name=fields.text("name", default=slug),
                policy=_policy(fields.child("policy", POLICY_KEYS), vocabulary),
                credentials=_credentials(fields, known, environ),
                smart_routing=_smart_routing(
                    fields.child("smart_routing", tiers.SMART_ROUTING_KEYS), known
                ),
                auto_router=_auto_router(fields.child("auto_router", auto.AUTO_ROUTER_KEYS), known),
                presets=presets,
                keys=parse_keys(fields, preset_slugs, route_slugs),
                routes=routes,
                budgets=parse_budgets(fields),
                limits=parse_limits(fields.child("limits", LIMIT_KEYS)),
            )
        )
    check_unique(root.issues, [(f"workspaces[{i}].slug", s.slug) for i, s in enumerate(specs)])
    return tuple(specs)


def _policy(fields: Fields | None, vocabulary: Vocabulary) -> PolicySpec | None:
    if fields is None:
        return None
    max_price = fields.child("max_price", ("prompt", "completion"))
    budget_usd = fields.number(
        "daily_budget", default=None, nullable=True, maximum=DAILY_BUDGET_MAX_USD
    )
    return PolicySpec(
        allowed_residency=fields.texts("allowed_residency", choices=vocabulary.residency_classes),
        allowed_regions=fields.texts("allowed_regions"),
        provider_allow=fields.texts("provider_allow"),
        provider_deny=fields.texts("provider_deny"),
        model_allow=fields.texts("model_allow"),
        model_deny=fields.texts("model_deny"),
        partners=fields.flag("partners", default=False),
        max_price_prompt=max_price.money("prompt", optional=True) if max_price else None,
        max_price_completion=max_price.money("completion", optional=True) if max_price else None,
        retention=fields.text(
            "retention", default=DEFAULT_RETENTION, pattern=RETENTION, hint=RETENTION_HINT
        ),
        data_classes=fields.texts("data_classes"),
        # Budgets are USD in the file, integer micro-dollars in the database (half up).
        daily_budget_micros=None if budget_usd is None else to_micros(Decimal(str(budget_usd))),
        routing_mode=fields.choice("routing_mode", vocabulary.routing_modes, default="balanced"),
        max_attempts=fields.integer("max_attempts", default=3, maximum=MAX_ATTEMPTS_LIMIT),
        timeouts=read_timeouts(fields),
        cooldown=_cooldown(fields),
    )


def _cooldown(policy: Fields) -> dict[str, float]:
    """`{base_s, max_s}` (SPEC R-EXE-3), each optional, seconds > 0, base ≤ max."""
    fields = policy.child("cooldown", ("base_s", "max_s"))
    if fields is None:
        return {}
    cooldown = {
        key: fields.number(key, exclusive_minimum=True) or 0.0
        for key in ("base_s", "max_s")
        if fields.has(key)
    }
    if cooldown.get("max_s", float("inf")) < cooldown.get("base_s", 0.0):
        fields.error("max_s", "must be ≥ base_s")
    return cooldown


def _credentials(
    workspace: Fields, known: Known, environ: Mapping[str, str]
) -> tuple[CredentialSpec, ...]:
    specs = []
    for path, raw in workspace.items("credentials", default=()):
        fields = Fields(raw, path, workspace.issues, CREDENTIAL_KEYS)
        provider = fields.text("provider", max_length=64)
        known.check(fields, "provider", provider, "provider")
        allowed_models = fields.texts("models", pattern=MODEL_SLUG, hint="a vendor/name slug")
        listed = fields.raw.get("models")
        for index, model in enumerate(listed if isinstance(listed, list) else []):
            if model in allowed_models:  # the well-formed ones; the others are reported
                known.check(fields, f"models[{index}]", model, "model")
        specs.append(
            CredentialSpec(
                provider=provider,
                api_key=read_secret(fields, environ, required=True) or Secret("", env=None),
                allowed_models=allowed_models,
                managed_fallback=fields.flag("managed_fallback", default=False),
            )
        )
    keys = [
        (f"{workspace.at('credentials')}[{i}].provider", s.provider) for i, s in enumerate(specs)
    ]
    check_unique(workspace.issues, keys)
    return tuple(specs)


def _smart_routing(fields: Fields | None, known: Known) -> dict[str, Any] | None:
    """SPEC §5: tier aliases `{alias: {easy, hard, default}}`, threshold, session TTL."""
    if fields is None:
        return None
    settings: dict[str, Any] = {}
    if fields.has("threshold"):
        settings["threshold"] = fields.integer("threshold", minimum=tiers.MIN_THRESHOLD)
    if fields.has("session_ttl_s"):
        settings["session_ttl_s"] = fields.integer("session_ttl_s")
    if fields.has("effort_keywords"):
        settings["effort_keywords"] = list(fields.texts("effort_keywords"))
    aliases = {}
    for path, name, raw in fields.entries("aliases"):
        alias = Fields(raw, path, fields.issues, tiers.ALIAS_KEYS)
        targets = {tier: alias.text(tier) for tier in tiers.TIERS}
        for tier, target in targets.items():
            known.check(alias, tier, target, "target")
        if alias.has("default"):
            targets["default"] = alias.choice("default", tiers.TIERS)
        aliases[name] = targets
    if fields.has("aliases"):
        settings["aliases"] = aliases
    return settings


def _auto_router(fields: Fields | None, known: Known) -> dict[str, Any] | None:
    """SPEC §6: objective, spend profile (a name or custom caps), model patterns, fallback,
    and the optional LLM classifier (a catalog model and a strict timeout, R-AUTO-2)."""
    if fields is None:
        return None
    settings: dict[str, Any] = {}
    if fields.has("objective"):
        settings["objective"] = fields.choice("objective", auto.OBJECTIVES)
    profile = fields.raw.get("spend_profile")
    caps = None
    if isinstance(profile, Mapping):
        caps = fields.child("spend_profile", auto.SPEND_CAP_KEYS)
    if caps is not None:  # custom caps, USD per 1M tokens
        settings["spend_profile"] = {key: caps.number(key) for key in auto.SPEND_CAP_KEYS}
    elif isinstance(profile, str) and profile in auto.SPEND_PROFILES:  # `in` a dict needs a str
        settings["spend_profile"] = profile
    elif fields.has("spend_profile"):
        names = ", ".join(auto.SPEND_PROFILES)
        fields.error("spend_profile", f"must be one of {names} or {{input, output}} caps")
    if fields.has("allowed_models"):
        settings["allowed_models"] = list(fields.texts("allowed_models"))
    if fields.has("fallback"):
        settings["fallback"] = fields.flag("fallback", default=auto.DEFAULT_FALLBACK)
    classifier = fields.child("classifier", auto.CLASSIFIER_KEYS)
    if classifier is not None:
        model = classifier.text("model")
        known.check(classifier, "model", model, "model")
        timeout_ms = classifier.integer(
            "timeout_ms",
            default=auto.DEFAULT_CLASSIFIER_TIMEOUT_MS,
            maximum=auto.CLASSIFIER_TIMEOUT_MAX_MS,
        )
        settings["classifier"] = {"model": model, "timeout_ms": timeout_ms}
    return settings


def _presets(workspace: Fields) -> tuple[PresetSpec, ...]:
    specs = [
        parse_preset(raw, path, workspace.issues)
        for path, raw in workspace.items("presets", default=())
    ]
    keys = [(f"{workspace.at('presets')}[{i}].slug", s.slug) for i, s in enumerate(specs)]
    check_unique(workspace.issues, keys)
    return tuple(specs)


def parse_preset(raw: object, path: str, issues: Issues) -> PresetSpec:
    """One preset (R-PRE-1) at `path`, its problems added to `issues`: the rules of
    `apply`, which the management API's `presets` resource validates with too."""
    fields = Fields(raw, path, issues, PRESET_KEYS)
    params: dict[str, Any] = {}
    for param_path, name, value in fields.entries("default_params"):
        if is_json(value):
            params[name] = value
        else:
            fields.issues.add(param_path, "must be a JSON value (string, number, list, ...)")
    return PresetSpec(
        slug=fields.text("slug", pattern=SLUG, hint="a slug", max_length=64),
        allowed_models=fields.texts("allowed_models"),
        provider_allow=fields.texts("provider_allow"),
        provider_ignore=fields.texts("provider_ignore"),
        default_prompt=fields.text("default_prompt", default="", max_length=MAX_PROMPT_CHARS),
        default_params=params,
    )
