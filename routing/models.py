"""The catalog: providers, models, endpoints (provider × model × region), virtual models;
and, from routing/live_models.py, the live-metric rollup's tables.

Rows become immutable `routing.engine.types` values in the gateway's in-process snapshot; the
engine never sees a model instance.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from routing.engine.virtual import STRATEGIES
from routing.live_models import EndpointStats, LiveSlice  # the live-metric rollup's tables

__all__ = ["Endpoint", "EndpointStats", "LiveSlice", "Model", "Provider", "VirtualModel"]

API_STYLES = ("openai", "anthropic")
CAPABILITIES = ("text", "vision", "tools", "embedding", "speech", "rerank")
SOVEREIGNTY_CLASSES = ("eu-owned", "eu-hosted", "any")
ENDPOINT_STATUSES = ("active", "degraded", "disabled", "catalog_only")
VIRTUAL_STRATEGIES = STRATEGIES  # the engine's (routing/engine/virtual.py), one list


def _choices(values: tuple[str, ...]) -> list[tuple[str, str]]:
    return [(value, value) for value in values]


class Provider(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    api_style = models.CharField(max_length=12, choices=_choices(API_STYLES), default="openai")
    base_url = models.URLField(max_length=500)
    # Managed (installation-wide) credential, encrypted like BYOK keys; write-only.
    credential_ciphertext = models.BinaryField(null=True, blank=True)
    credential_nonce = models.BinaryField(null=True, blank=True)
    credential_key_id = models.CharField(max_length=32, blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.slug


class Model(models.Model):
    slug = models.CharField(max_length=200, unique=True)  # canonical vendor/name (SPEC D-11)
    aliases = models.JSONField(default=list, blank=True)
    capabilities = models.JSONField(default=list, blank=True)
    context_window = models.PositiveIntegerField(default=8192)
    parameters_b = models.FloatField(null=True, blank=True)
    strong_languages = models.JSONField(default=list, blank=True)
    task_tags = models.JSONField(default=list, blank=True)
    documentation_completeness = models.FloatField(default=0.0)
    version = models.CharField(max_length=64, blank=True, default="")
    benchmarks = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)  # `created` in /v1/models
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.slug


class Endpoint(models.Model):
    id = models.CharField(max_length=200, primary_key=True)
    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, related_name="endpoints")
    model = models.ForeignKey(Model, on_delete=models.CASCADE, related_name="endpoints")
    upstream_model = models.CharField(max_length=200)
    region = models.CharField(max_length=64)
    base_url = models.URLField(max_length=500, blank=True, default="")  # blank = provider's
    price_input = models.DecimalField(max_digits=12, decimal_places=6)  # USD per 1M tokens
    price_output = models.DecimalField(max_digits=12, decimal_places=6)
    status = models.CharField(max_length=12, choices=_choices(ENDPOINT_STATUSES), default="active")
    sovereignty_class = models.CharField(
        max_length=10, choices=_choices(SOVEREIGNTY_CLASSES), default="any"
    )
    partner = models.BooleanField(default=False)
    timeouts = models.JSONField(default=dict, blank=True)
    data_classes = models.JSONField(default=list, blank=True)  # cleared for (D-22); [] = all
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.id


class VirtualModel(models.Model):
    slug = models.CharField(max_length=200, unique=True)
    strategy = models.CharField(
        max_length=16, choices=_choices(VIRTUAL_STRATEGIES), default="round_robin"
    )
    targets = models.JSONField(default=list)  # [{"model": slug, "weight": 1}]
    # Strategy `adaptive` only: {"objective": balanced|cost|latency, "min_weight_fraction"}
    adaptive = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)
    created_at = models.DateTimeField(default=timezone.now)  # `created` in /v1/models

    def __str__(self) -> str:
        return self.slug
