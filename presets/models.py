"""Presets (SPEC R-PRE-1), the settings of API keys that refer to them (R-KEY-1), and
dynamic routes with their immutable versions and deployments (R-ROUTE-1/2).

A preset is a named bundle of allowed models, provider allow/ignore lists and defaults
(a system prompt and parameters, applied only where a request is silent). `KeySettings`
are what a workspace says about the key *of a name* (D-24): expiry, allowed model
patterns, a preset and the routes tried in order. They are keyed by name, not by key row,
so settings written before the key exists apply once it is created, and a key made to
replace a revoked one of the same name inherits them. Both reach the request path only
through the configuration snapshot (no SQL per request).
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from workspaces.models import Workspace


class Preset(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="presets")
    slug = models.SlugField(max_length=64)
    allowed_models = models.JSONField(default=list, blank=True)  # patterns; empty = any
    provider_allow = models.JSONField(default=list, blank=True)
    provider_ignore = models.JSONField(default=list, blank=True)
    default_prompt = models.TextField(blank=True, default="")
    default_params = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "slug"], name="preset_slug_per_workspace")
        ]

    def __str__(self) -> str:
        return f"{self.workspace}/{self.slug}"


class KeySettingsQuerySet(models.QuerySet["KeySettings"]):
    def names_by_route(self) -> dict[str, list[str]]:
        """{route slug: the names of these settings that attach the route, sorted} (D-23).
        The console's route and budget pages and replay all ask this. `routes` is read in
        Python: a JSON containment lookup is not available on SQLite."""
        found: dict[str, list[str]] = {}
        for name, routes in self.values_list("name", "routes"):
            for slug in routes or ():
                found.setdefault(slug, []).append(name)
        return {slug: sorted(names) for slug, names in found.items()}


class KeySettings(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="key_settings")
    name = models.CharField(max_length=100)  # the ApiKey.name these apply to
    expires_at = models.DateTimeField(null=True, blank=True)  # the earlier of this and the key's
    allowed_models = models.JSONField(default=list, blank=True)  # patterns; empty = any
    # PROTECT: deleting a preset in use would silently widen what its keys may do.
    preset = models.ForeignKey(Preset, null=True, blank=True, on_delete=models.PROTECT)
    routes = models.JSONField(default=list, blank=True)  # route slugs, tried in order (D-23)
    updated_at = models.DateTimeField(auto_now=True)

    objects = KeySettingsQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "key settings"
        constraints = [
            models.UniqueConstraint(fields=["workspace", "name"], name="key_settings_per_name")
        ]

    def __str__(self) -> str:
        return f"{self.workspace}/{self.name}"


class Route(models.Model):
    """A dynamic route (SPEC R-ROUTE-1/2): a name in a workspace with immutable versions.
    `deployed` is the version requests are routed by; none routes nothing (D-25)."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="routes")
    slug = models.SlugField(max_length=64)
    deployed = models.ForeignKey(
        "RouteVersion", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "slug"], name="route_slug_per_workspace")
        ]

    def __str__(self) -> str:
        return f"{self.workspace}/{self.slug}"


class RouteVersion(models.Model):
    """One saved state of a route, never changed after it is written (R-ROUTE-2, D-25):
    `content` is the route as written (CONFIG.md shape), `content_hash` its canonical
    digest, so saving an unchanged route finds it instead of adding a version."""

    route = models.ForeignKey(Route, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()  # 1, 2, … per route
    content = models.JSONField()
    content_hash = models.CharField(max_length=64)
    author = models.CharField(max_length=150)
    message = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["route", "number"]
        constraints = [
            models.UniqueConstraint(fields=["route", "number"], name="route_version_number")
        ]

    def __str__(self) -> str:
        return f"{self.route} v{self.number}"


class RouteDeployment(models.Model):
    """Each time a version was put in effect: deploys, rollbacks and the rollout guard's
    automatic rollbacks (R-BEY-4), newest last. A rollback's default target is the version
    deployed before the current one."""

    class Action(models.TextChoices):
        DEPLOY = "deploy"
        ROLLBACK = "rollback"
        GUARD_ROLLBACK = "guard_rollback"

    route = models.ForeignKey(Route, on_delete=models.CASCADE, related_name="deployments")
    version = models.ForeignKey(RouteVersion, on_delete=models.PROTECT, related_name="+")
    action = models.CharField(max_length=16, choices=Action.choices)
    actor = models.CharField(max_length=150)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["route", "id"]
