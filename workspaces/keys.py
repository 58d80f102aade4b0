"""Bearer secrets of the form `<prefix><lookup_id>-<secret>`: workspace API keys and
management tokens.

The lookup id finds the row; only HMAC-SHA256(pepper, secret) is stored and compared in
constant time. Each kind has its own prefix and `split_*` accepts only its own, so a
management token is never taken for an API key nor the other way round:

- API keys `sk-sy-<lookup>-<secret>` (the `sk-` prefix keeps secret scanners and SDKs
  happy; they go to `/v1`);
- management tokens `sy-mt-<lookup>-<secret>` (they go to `/api/v1`).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

KEY_PREFIX = "sk-sy-"
TOKEN_PREFIX = "sy-mt-"
LOOKUP_ID_CHARS = 12
_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_BODY = r"([A-Za-z0-9]{12})-([A-Za-z0-9_\-]{32,128})$"
_KEY_RE = re.compile("^" + re.escape(KEY_PREFIX) + _BODY)
_TOKEN_RE = re.compile("^" + re.escape(TOKEN_PREFIX) + _BODY)


@dataclass(frozen=True, slots=True)
class IssuedKey:
    """A freshly generated key or token; `plaintext` exists only until it is shown once."""

    lookup_id: str
    secret_hmac: str
    plaintext: str


def hash_secret(secret: str, pepper: str) -> str:
    return hmac.new(pepper.encode(), secret.encode(), hashlib.sha256).hexdigest()


def _generate(pepper: str, prefix: str) -> IssuedKey:
    lookup_id = "".join(secrets.choice(_ALPHABET) for _ in range(LOOKUP_ID_CHARS))
    secret = secrets.token_urlsafe(32)
    return IssuedKey(
        lookup_id=lookup_id,
        secret_hmac=hash_secret(secret, pepper),
        plaintext=f"{prefix}{lookup_id}-{secret}",
    )


def _split(pattern: re.Pattern[str], raw: str) -> tuple[str, str] | None:
    match = pattern.match(raw)
    return (match.group(1), match.group(2)) if match else None


def generate_key(pepper: str) -> IssuedKey:
    return _generate(pepper, KEY_PREFIX)


def generate_token(pepper: str) -> IssuedKey:
    return _generate(pepper, TOKEN_PREFIX)


def split_key(raw: str) -> tuple[str, str] | None:
    """`sk-sy-<lookup>-<secret>` -> (lookup, secret); None when malformed (a token too)."""
    return _split(_KEY_RE, raw)


def split_token(raw: str) -> tuple[str, str] | None:
    """`sy-mt-<lookup>-<secret>` -> (lookup, secret); None when malformed (a key too)."""
    return _split(_TOKEN_RE, raw)


def secret_matches(secret: str, stored_hmac: str, pepper: str) -> bool:
    return hmac.compare_digest(hash_secret(secret, pepper), stored_hmac)
