"""Presets (SPEC R-PRE-1): named bundles of allowed models, provider lists and default
parameters, applied before provider selection. Behaviour arrives with the presets issue."""

from __future__ import annotations

from django.db import models

from workspaces.models import ApiKey, Workspace


class Preset(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="presets")
    slug = models.SlugField(max_length=64)
    allowed_models = models.JSONField(default=list, blank=True)
    provider_allow = models.JSONField(default=list, blank=True)
    provider_ignore = models.JSONField(default=list, blank=True)
    default_prompt = models.TextField(blank=True, default="")
    default_params = models.JSONField(default=dict, blank=True)
    api_keys = models.ManyToManyField(ApiKey, blank=True, related_name="presets")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "slug"], name="preset_slug_per_workspace")
        ]

    def __str__(self) -> str:
        return f"{self.workspace}/{self.slug}"
