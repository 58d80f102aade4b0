"""Workspace API keys: `sk-sy-<lookup_id>-<secret>`.

The lookup id finds the row; only HMAC-SHA256(pepper, secret) is stored and compared in
constant time. The `sk-` prefix keeps secret scanners and SDKs happy.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

KEY_PREFIX = "sk-sy-"
LOOKUP_ID_CHARS = 12
_KEY_RE = re.compile(r"^sk-sy-([A-Za-z0-9]{12})-([A-Za-z0-9_\-]{32,128})$")
_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


@dataclass(frozen=True, slots=True)
class IssuedKey:
    """A freshly generated key; `plaintext` exists only until it is shown once."""

    lookup_id: str
    secret_hmac: str
    plaintext: str


def hash_secret(secret: str, pepper: str) -> str:
    return hmac.new(pepper.encode(), secret.encode(), hashlib.sha256).hexdigest()


def generate_key(pepper: str) -> IssuedKey:
    lookup_id = "".join(secrets.choice(_ALPHABET) for _ in range(LOOKUP_ID_CHARS))
    secret = secrets.token_urlsafe(32)
    return IssuedKey(
        lookup_id=lookup_id,
        secret_hmac=hash_secret(secret, pepper),
        plaintext=f"{KEY_PREFIX}{lookup_id}-{secret}",
    )


def split_key(raw: str) -> tuple[str, str] | None:
    """`sk-sy-<lookup>-<secret>` -> (lookup, secret); None when malformed."""
    match = _KEY_RE.match(raw)
    return (match.group(1), match.group(2)) if match else None


def secret_matches(secret: str, stored_hmac: str, pepper: str) -> bool:
    return hmac.compare_digest(hash_secret(secret, pepper), stored_hmac)
