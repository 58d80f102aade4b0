"""Writes to routes (SPEC R-ROUTE-2, D-25, R-OBS-4): saving a route as a new immutable
version, deploying a version, rolling back, and the diff between two versions. Each write
runs in one transaction and records an AdminEvent (`audit.events.record_event`) saying
who, when and what changed: the route's `version` (a save) or `deployed_version` (a
deploy or rollback) before and after, and beside it the `diff` node by node. `apply`,
`manage.py route`, the management API and the rollout guard all come through here.

A deploy or rollback saves the `Route` row, whose post_save receiver bumps the
configuration version on commit (gateway/state/snapshot.py): every replica reloads its
snapshot within one poll, and the version stamp's change reaches replicas sharing Redis at
once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from audit.events import record_event
from presets.catalog import catalog_names
from presets.models import Route, RouteDeployment, RouteVersion
from routing.engine.resolve import CatalogNames
from routing.engine.routes import content_hash, diff_routes, parse_route, render_diff
from workspaces.models import Workspace

MAX_MESSAGE_CHARS = 500  # RouteVersion.message


class RouteError(Exception):
    """A request about routes that cannot be carried out (unknown version, nothing to roll
    back to); nothing was written."""


@dataclass(frozen=True, slots=True)
class SavedRoute:
    route: Route
    version: RouteVersion
    created: bool  # False: the content equals the newest version's (D-25)


def save_route(
    workspace: Workspace,
    content: Mapping[str, Any],
    *,
    actor: str,
    message: str = "",
    catalog: CatalogNames | None = None,
    path: str = "",
) -> SavedRoute:
    """Validate `content` (CONFIG.md's route shape) and store it as the route's next
    version, unless it equals the newest one. Raises RouteInvalid with every problem.
    `path` prefixes the problems' paths (`workspaces[0].routes[1]` for `apply`)."""
    parse_route(content, path=path, catalog=catalog or catalog_names())
    stored = dict(content)
    digest = content_hash(stored)
    with transaction.atomic():
        route, _ = Route.objects.select_for_update().get_or_create(
            workspace=workspace, slug=stored["slug"]
        )
        newest = route.versions.order_by("-number").first()
        if newest is not None and newest.content_hash == digest:
            return SavedRoute(route, newest, created=False)
        version = RouteVersion.objects.create(
            route=route,
            number=newest.number + 1 if newest else 1,
            content=stored,
            content_hash=digest,
            author=actor,
            message=message[:MAX_MESSAGE_CHARS],
        )
        _audit(
            actor,
            route,
            "route.save",
            version,
            before={"version": newest.number} if newest else None,
            after={"version": version.number},
            extra={
                "message": version.message,
                "diff": render_diff(diff_routes(newest.content if newest else {}, stored)),
            },
        )
    return SavedRoute(route, version, created=True)


def deploy_route(route: Route, number: int | None = None, *, actor: str) -> RouteVersion:
    """Put version `number` (default: the newest) in effect on every replica (D-25)."""
    with transaction.atomic():
        route = Route.objects.select_for_update().get(pk=route.pk)
        if number is None:
            version = route.versions.order_by("-number").first()
            if version is None:
                raise RouteError(f"route {route.slug!r} has no version to deploy")
        else:
            version = _version(route, number)
        return _put_in_effect(route, version, actor, RouteDeployment.Action.DEPLOY)


def rollback_route(
    route: Route,
    number: int | None = None,
    *,
    actor: str,
    automatic: bool = False,
    numbers: Mapping[str, Any] | None = None,
    only_if_deployed: int | None = None,
) -> RouteVersion:
    """Deploy an earlier version: `number`, or by default the version deployed before the
    current one. `automatic` marks the rollout guard's rollback, whose `numbers` (the
    figures it compared, R-BEY-4) go into the audit event. With `only_if_deployed`, nothing
    happens unless that version is still the deployed one (the deployed one is returned):
    two guards judging one route at once roll it back once."""
    with transaction.atomic():
        route = Route.objects.select_for_update().get(pk=route.pk)
        if route.deployed_id is None:
            raise RouteError(f"route {route.slug!r} is not deployed: nothing to roll back")
        current = route.deployed
        if only_if_deployed is not None and current and current.number != only_if_deployed:
            return current
        if number is not None:
            version = _version(route, number)
        else:
            earlier = (
                route.deployments.exclude(version_id=route.deployed_id).order_by("-id").first()
            )
            if earlier is None:
                raise RouteError(f"route {route.slug!r} has no earlier deployed version")
            version = earlier.version
        actions = RouteDeployment.Action
        action = actions.GUARD_ROLLBACK if automatic else actions.ROLLBACK
        return _put_in_effect(route, version, actor, action, numbers)


def diff_versions(route: Route, from_number: int, to_number: int | None = None) -> list[str]:
    """The readable diff from version `from_number` to `to_number` (default: the deployed
    version), node by node."""
    old = _version(route, from_number)
    if to_number is None:
        if route.deployed is None:
            raise RouteError(f"route {route.slug!r} is not deployed: give the version to compare")
        new = route.deployed
    else:
        new = _version(route, to_number)
    return render_diff(diff_routes(old.content, new.content))


def _version(route: Route, number: int) -> RouteVersion:
    version = route.versions.filter(number=number).first()
    if version is None:
        raise RouteError(f"route {route.slug!r} has no version {number}")
    return version


def _put_in_effect(
    route: Route,
    version: RouteVersion,
    actor: str,
    action: str,
    numbers: Mapping[str, Any] | None = None,
) -> RouteVersion:
    before = route.deployed
    if before is not None and before.pk == version.pk:
        return version  # already in effect: nothing changes, nothing to audit
    route.deployed = version
    route.save(update_fields=["deployed", "updated_at"])
    RouteDeployment.objects.create(route=route, version=version, action=action, actor=actor)
    extra: dict[str, Any] = {
        "diff": render_diff(diff_routes(before.content if before else {}, version.content)),
    }
    if numbers is not None:
        extra["numbers"] = dict(numbers)
    _audit(
        actor,
        route,
        f"route.{action}",
        version,
        before={"deployed_version": before.number if before else None},
        after={"deployed_version": version.number},
        extra=extra,
    )
    return version


def _audit(
    actor: str,
    route: Route,
    action: str,
    version: RouteVersion,
    *,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any],
    extra: Mapping[str, Any],
) -> None:
    record_event(
        actor=actor,
        workspace=route.workspace,
        action=action,
        target=f"{route.slug} v{version.number}",
        before=before,
        after=after,
        extra=extra,
    )
