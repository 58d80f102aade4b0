"""Who is calling and what the call needs to reach an upstream: key authentication
against the snapshot, per-request context, and turning endpoints into callable targets
(credential chosen and decrypted here, on the upstream call path only)."""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.http import HttpRequest

from gateway.api.errors import ApiError
from gateway.config import GatewaySettings
from gateway.execute import Target
from gateway.ids import new_uuid
from gateway.snapshot import KeyEntry, Snapshot, WorkspaceEntry
from routing.attempts import Attempt
from routing.types import Decision, EndpointInfo, RoutingRequest
from workspaces.keys import secret_matches, split_key
from workspaces.secrets import DecryptionError, owner_aad, unseal

log = logging.getLogger(__name__)


def _invalid_key() -> ApiError:
    # One body for unknown, malformed, expired and revoked keys (SPEC D-3).
    return ApiError(401, "Invalid API key.", code="invalid_api_key")


def presented_key(request: HttpRequest) -> str:
    """The workspace key the client sent (no check): a secret upstream text must not echo."""
    scheme, _, raw = request.headers.get("Authorization", "").partition(" ")
    return raw.strip() if scheme.lower() == "bearer" else ""


def authenticate(request: HttpRequest, snap: Snapshot) -> tuple[KeyEntry, WorkspaceEntry]:
    header = request.headers.get("Authorization", "")
    scheme, _, raw = header.partition(" ")
    if scheme.lower() != "bearer" or not raw:
        raise ApiError(
            401, "Missing API key: send `Authorization: Bearer <key>`.", code="invalid_api_key"
        )
    parts = split_key(raw.strip())
    if parts is None:
        raise _invalid_key()
    lookup_id, secret = parts
    key = snap.keys.get(lookup_id)
    if key is None or not secret_matches(secret, key.secret_hmac, settings.SWITCHYARD_KEY_PEPPER):
        raise _invalid_key()
    if key.expires_at is not None and key.expires_at <= time.time():
        raise _invalid_key()
    workspace = snap.workspaces.get(key.workspace_id)
    if workspace is None:
        raise _invalid_key()
    return key, workspace


@dataclass(slots=True)
class CallContext:
    """Everything known about one authenticated request as it moves along the path."""

    request_id: str
    snapshot: Snapshot
    key: KeyEntry
    workspace: WorkspaceEntry
    operation: str
    trace_id: uuid.UUID = field(default_factory=new_uuid)
    started: float = field(default_factory=time.perf_counter)
    created: int = field(default_factory=lambda: int(time.time()))
    requested_model: str = ""
    stream: bool = False
    decision: Decision | None = None  # the decision of the model that is being tried
    decisions: list[dict[str, Any]] = field(default_factory=list)  # each model's, as recorded
    routing: RoutingRequest | None = None
    tier: Any = None  # gateway.api.tiering.TierOutcome when a tiered alias was asked for
    attempts: list[Attempt] = field(default_factory=list)
    purpose: str = ""  # "auto_routing_classifier" for the auto router's child request
    parent_id: uuid.UUID | None = None  # the client's trace, for a child request
    auto: dict[str, Any] | None = None  # the auto router's workload verdict (R-AUTO-2)
    session: Any = None  # gateway.api.affinity.Session when an affinity is on
    key_secret: str = field(default="", repr=False)  # the key as sent, for scrubbing only

    @property
    def completion_ids(self) -> dict[str, Any]:
        return {"completion_id": f"chatcmpl-{self.trace_id.hex}", "created": self.created}

    def elapsed_ms(self) -> int:
        return int((time.perf_counter() - self.started) * 1000)

    def elapsed_s(self) -> float:
        return time.perf_counter() - self.started


def _credential(ctx: CallContext, endpoint: EndpointInfo) -> str:
    """The workspace's BYOK key for this provider when it applies, else the managed key."""
    ring = settings.SWITCHYARD_ENCRYPTION_KEYS
    own = ctx.workspace.credentials.get(endpoint.provider)
    try:
        if (
            own is not None
            and (not own.models or endpoint.model in own.models)
            and (not own.api_key_ids or ctx.key.pk in own.api_key_ids)
        ):
            return unseal(own.sealed, owner_aad(ctx.workspace.slug, endpoint.provider), ring)
        provider = ctx.snapshot.providers[endpoint.provider]
        if provider.managed is not None:
            return unseal(provider.managed, owner_aad(None, endpoint.provider), ring)
    except DecryptionError as exc:
        log.error("credential for provider %s does not decrypt: %s", endpoint.provider, exc)
    return ""


def _timeout_s(name: str, *sources: dict[str, int], default_s: float) -> float:
    for source in sources:
        if name in source:
            return source[name] / 1000
    return default_s


def make_targets(
    ctx: CallContext, endpoints: tuple[EndpointInfo, ...], gateway: GatewaySettings
) -> list[Target]:
    targets = []
    for endpoint in endpoints:
        own = ctx.snapshot.endpoint_timeouts.get(endpoint.id, {})
        policy = ctx.workspace.timeouts
        targets.append(
            Target(
                endpoint=endpoint,
                base_url=ctx.snapshot.base_urls[endpoint.id],
                api_style=ctx.snapshot.providers[endpoint.provider].api_style,
                api_key=_credential(ctx, endpoint),
                connect_timeout_s=_timeout_s(
                    "connect_ms", own, policy, default_s=gateway.connect_timeout_s
                ),
                ttfb_timeout_s=_timeout_s("ttft_ms", own, policy, default_s=gateway.ttfb_timeout_s),
                idle_timeout_s=_timeout_s("idle_ms", own, policy, default_s=gateway.idle_timeout_s),
                redact=(ctx.key_secret,) if ctx.key_secret else (),
            )
        )
    return targets


def deadline_s(ctx: CallContext, gateway: GatewaySettings) -> float:
    return _timeout_s("total_ms", ctx.workspace.timeouts, default_s=gateway.total_timeout_s)
