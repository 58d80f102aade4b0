"""Encryption of provider keys (BYOK and managed) with AES-256-GCM (SPEC R-BYOK-1).

The associated data names the owner (workspace and provider), so a ciphertext moved to
another row does not decrypt. Each ciphertext records the id of the key that made it;
the first key in the key ring encrypts, all of them decrypt, which is how keys rotate.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

NONCE_BYTES = 12  # GCM's standard nonce size; random per encryption


class DecryptionError(Exception):
    """The ciphertext, its owner binding or the key ring does not match."""


@dataclass(frozen=True, slots=True)
class Sealed:
    ciphertext: bytes
    nonce: bytes
    key_id: str


def owner_aad(workspace_slug: str | None, provider_slug: str) -> bytes:
    """Associated data for a credential: `ws:<slug>|provider:<slug>`, or the installation."""
    owner = f"ws:{workspace_slug}" if workspace_slug else "installation"
    return f"{owner}|provider:{provider_slug}".encode()


def seal(plaintext: str, aad: bytes, key_ring: Mapping[str, bytes]) -> Sealed:
    key_id, key = next(iter(key_ring.items()))
    nonce = os.urandom(NONCE_BYTES)
    ciphertext = AESGCM(key).encrypt(nonce, plaintext.encode(), aad)
    return Sealed(ciphertext=ciphertext, nonce=nonce, key_id=key_id)


def unseal(sealed: Sealed, aad: bytes, key_ring: Mapping[str, bytes]) -> str:
    key = key_ring.get(sealed.key_id)
    if key is None:
        raise DecryptionError(f"encryption key {sealed.key_id!r} is not in the key ring")
    try:
        plaintext = AESGCM(key).decrypt(bytes(sealed.nonce), bytes(sealed.ciphertext), aad)
    except InvalidTag:
        raise DecryptionError("credential does not decrypt for this owner") from None
    return plaintext.decode()
