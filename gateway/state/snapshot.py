"""The request path's view of configuration: one immutable `Snapshot` per worker, and what
keeps it current.

Loading (gateway/state/snapshot_load.py) reads every table the request path needs once;
after that a request touches no database. Every configuration write bumps `ConfigVersion`
(a signal receiver does it on commit, so admin edits, `apply` and services alike
invalidate); each worker checks the stamp at most every `snapshot_poll_s` in the background
and swaps in a new snapshot when it changed. A request never waits for that check: it uses
the snapshot it has — unless it presents a key the snapshot lacks: a key made since the last
poll is then looked up, rationed (gateway/state/key_lookups.py), and when the database has
it the snapshot is reloaded at once, so a new key works on every worker as soon as its
creation has answered (SPEC R-KEY-1). Entries only ever come from a whole snapshot, so a
revocation is in effect at the next poll, as any other change. The snapshot's value types
(gateway/state/snapshot_types.py) and `load_snapshot` are re-exported here, where callers
have always imported them.
"""

from __future__ import annotations

import asyncio
import logging
import time

from django.conf import settings
from django.db import models, transaction
from django.db.models import F
from django.db.models.signals import m2m_changed, post_delete, post_save

from budgets.models import Budget, RateLimit
from gateway.failure_log import RepeatedFailure
from gateway.models import ConfigVersion
from gateway.state.db_thread import in_db_thread
from gateway.state.key_lookups import KeyLookups
from gateway.state.shared_state import announce_config_change
from gateway.state.snapshot_keys import key_exists
from gateway.state.snapshot_load import load_snapshot, read_version
from gateway.state.snapshot_types import (
    CredentialEntry,
    KeyEntry,
    ModelEntry,
    ProviderEntry,
    Snapshot,
    VirtualEntry,
    WorkspaceEntry,
)
from presets.models import KeySettings, Preset, Route
from routing.models import Endpoint, Model, Provider, VirtualModel
from workspaces.models import ApiKey, Policy, ProviderCredential, Workspace

__all__ = [
    "CONFIG_MODELS",
    "CredentialEntry",
    "KeyEntry",
    "ModelEntry",
    "ProviderEntry",
    "Snapshot",
    "SnapshotHolder",
    "VirtualEntry",
    "WorkspaceEntry",
    "bump_version",
    "connect_invalidation_signals",
    "load_snapshot",
]

log = logging.getLogger(__name__)

CONFIG_MODELS: tuple[type[models.Model], ...] = (
    Workspace,
    ApiKey,
    ProviderCredential,
    Policy,
    Provider,
    Model,
    Endpoint,
    VirtualModel,
    Preset,
    KeySettings,
    Route,
    Budget,
    RateLimit,
)


def _hint_if_tiers_idle(snapshot: Snapshot) -> None:
    if not any(ws.tiers for ws in snapshot.workspaces.values()):
        log.info(
            "smart tier routing is idle: no workspace configures tiered aliases "
            "(smart_routing.aliases, docs/smart-routing.md)"
        )


class SnapshotHolder:
    """Per-process holder: `await current()` returns a snapshot, reloading in the
    background when the version stamp moved (stale-while-revalidate)."""

    def __init__(self, poll_s: float) -> None:
        self.poll_s = poll_s
        self._snapshot: Snapshot | None = None
        self._checked_at = 0.0
        self._refresh: asyncio.Task[None] | None = None
        self._first_load = asyncio.Lock()
        # The first failure in full, then a line a minute: a database away for an hour
        # must not write a traceback every poll. (The module's clock, read at each call.)
        self._failures = RepeatedFailure(
            log, "configuration snapshot check", clock=lambda: time.monotonic()
        )
        self._lookups = KeyLookups(self._reloaded_if_made, clock=lambda: time.monotonic())
        self._lookup_failures = RepeatedFailure(
            log, "lookup of a key the snapshot lacks", clock=lambda: time.monotonic()
        )
        self._key_loads = asyncio.Lock()  # one reload for a new key at a time
        self._key_loads_begun = 0

    async def current(self) -> Snapshot:
        snapshot = self._snapshot
        if snapshot is None:
            async with self._first_load:
                if self._snapshot is None:
                    self._snapshot = await in_db_thread(load_snapshot)()
                    self._checked_at = time.monotonic()
                    log.info("configuration snapshot loaded at version %s", self._snapshot.version)
                    _hint_if_tiers_idle(self._snapshot)
            return self._snapshot
        if time.monotonic() - self._checked_at > self.poll_s and self._refresh is None:
            self._checked_at = time.monotonic()
            self._refresh = asyncio.create_task(self._check())
        return snapshot

    async def knowing(self, lookup_id: str | None) -> Snapshot:
        """`current()`, or when it lacks the key `lookup_id` and the database has it, the
        snapshot reloaded since; still `current()` for a key it cannot find (a 401)."""
        snapshot = await self.current()
        if lookup_id is None or lookup_id in snapshot.keys:
            return snapshot
        try:
            found = await self._lookups.exists(lookup_id)
        except Exception as error:  # the key stays unknown here until the next poll
            self._lookup_failures.failed(error)
            return snapshot
        self._lookup_failures.worked()
        return self._snapshot if found and self._snapshot is not None else snapshot

    async def _reloaded_if_made(self, lookup_id: str) -> bool:
        """Whether the database has the unrevoked key; if so a snapshot read after it was
        seen is current first (one reload serves every key seen before it began)."""
        if not await in_db_thread(key_exists)(lookup_id):
            return False
        seen_after = self._key_loads_begun
        async with self._key_loads:
            if self._key_loads_begun == seen_after:  # none began since: this one must
                self._key_loads_begun += 1
                self._snapshot = await in_db_thread(load_snapshot)()
                log.info(
                    "configuration snapshot reloaded at version %s for a key made since",
                    self._snapshot.version,
                )
        return self._snapshot is not None and lookup_id in self._snapshot.keys

    def check_now(self) -> None:
        """Check the version stamp at once (another process announced a change on Redis)
        rather than at the next poll; in the event loop's thread."""
        if self._snapshot is not None and self._refresh is None:
            self._checked_at = time.monotonic()
            self._refresh = asyncio.create_task(self._check())

    async def reload(self) -> Snapshot:
        self._snapshot = await in_db_thread(load_snapshot)()
        self._checked_at = time.monotonic()
        return self._snapshot

    async def _check(self) -> None:
        try:
            version = await in_db_thread(read_version)()
            if self._snapshot is None or version != self._snapshot.version:
                self._snapshot = await in_db_thread(load_snapshot)()
                log.info("configuration snapshot reloaded at version %s", version)
            self._failures.worked()
        except Exception as error:  # keep serving the old snapshot; try again next poll
            self._failures.failed(error)
        finally:
            self._refresh = None


def bump_version() -> None:
    """Mark configuration changed; call inside the writing transaction."""
    updated = ConfigVersion.objects.filter(pk=1).update(version=F("version") + 1)
    if not updated:
        ConfigVersion.objects.get_or_create(pk=1, defaults={"version": 1})


def _on_config_change(sender: type[models.Model], **kwargs: object) -> None:
    if kwargs.get("raw"):
        return  # fixture loading
    transaction.on_commit(bump_version)
    if settings.REDIS_URL:  # replicas sharing Redis check at once, not at their next poll
        transaction.on_commit(
            lambda: announce_config_change(
                settings.REDIS_URL, settings.SHARED_STATE_PREFIX, cluster=settings.REDIS_CLUSTER
            )
        )


def connect_invalidation_signals() -> None:
    for model in CONFIG_MODELS:
        post_save.connect(_on_config_change, sender=model, dispatch_uid=f"snap-save-{model}")
        post_delete.connect(_on_config_change, sender=model, dispatch_uid=f"snap-del-{model}")
    m2m_changed.connect(
        _on_config_change, sender=ProviderCredential.api_keys.through, dispatch_uid="snap-m2m"
    )
