"""BYOK encryption (SPEC R-BYOK-1): AES-256-GCM bound to workspace and provider."""

import os

import pytest

from workspaces.secrets import DecryptionError, Sealed, owner_aad, seal, unseal

RING = {"k2": os.urandom(32), "k1": os.urandom(32)}


def test_r_byok_1_round_trip_with_the_owner_binding():
    # given
    aad = owner_aad("acme", "groq")
    # when
    sealed = seal("gsk-secret", aad, RING)
    # then
    assert sealed.key_id == "k2"  # the first key of the ring encrypts
    assert b"gsk-secret" not in sealed.ciphertext
    assert unseal(sealed, aad, RING) == "gsk-secret"


@pytest.mark.parametrize(
    ("_case", "aad"),
    [
        ("another workspace", owner_aad("other", "groq")),
        ("another provider", owner_aad("acme", "mistral")),
        ("the installation", owner_aad(None, "groq")),
    ],
)
def test_r_byok_1_ciphertext_does_not_decrypt_for_another_owner(_case, aad):
    sealed = seal("gsk-secret", owner_aad("acme", "groq"), RING)
    with pytest.raises(DecryptionError):
        unseal(sealed, aad, RING)


def test_r_byok_1_tampered_ciphertext_fails():
    aad = owner_aad("acme", "groq")
    sealed = seal("gsk-secret", aad, RING)
    flipped = bytes([sealed.ciphertext[0] ^ 1]) + sealed.ciphertext[1:]
    with pytest.raises(DecryptionError):
        unseal(Sealed(flipped, sealed.nonce, sealed.key_id), aad, RING)


def test_r_byok_1_rotation_old_key_still_decrypts_and_unknown_key_fails():
    aad = owner_aad("acme", "groq")
    old = seal("gsk-secret", aad, {"k1": RING["k1"]})
    assert unseal(old, aad, RING) == "gsk-secret"
    with pytest.raises(DecryptionError):
        unseal(old, aad, {"k2": RING["k2"]})
