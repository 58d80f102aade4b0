"""Typed settings values handed to the request path (pure code never reads
`django.conf.settings` itself)."""

from __future__ import annotations

import base64
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GatewaySettings:
    max_body_bytes: int
    max_attempts: int
    connect_timeout_s: float
    ttfb_timeout_s: float
    idle_timeout_s: float
    total_timeout_s: float
    snapshot_poll_s: float
    trace_flush_s: float
    upstream_pool_size: int
    health_window_s: float
    unhealthy_errors: int
    cooldown_base_s: float
    cooldown_max_s: float
    session_affinity: bool


def parse_encryption_keys(value: str) -> dict[str, bytes]:
    """`kid:base64key,kid2:base64key` -> {kid: 32-byte key}; the first is the active key."""
    keys: dict[str, bytes] = {}
    for item in filter(None, (part.strip() for part in value.split(","))):
        key_id, sep, encoded = item.partition(":")
        if not sep or not key_id:
            raise ValueError("SWITCHYARD_ENCRYPTION_KEYS entries look like 'kid:base64key'")
        key = base64.b64decode(encoded)
        if len(key) != 32:
            raise ValueError(f"SWITCHYARD_ENCRYPTION_KEYS key {key_id!r} must be 32 bytes")
        keys[key_id] = key
    if not keys:
        raise ValueError("SWITCHYARD_ENCRYPTION_KEYS is empty")
    return keys
