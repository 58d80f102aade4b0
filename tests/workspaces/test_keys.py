"""Workspace API keys: `sk-sy-<lookup>-<secret>`, only an HMAC stored."""

from workspaces.keys import generate_key, secret_matches, split_key

PEPPER = "test-pepper"


def test_generated_key_splits_and_verifies():
    issued = generate_key(PEPPER)
    parts = split_key(issued.plaintext)
    assert parts is not None
    lookup_id, secret = parts
    assert lookup_id == issued.lookup_id
    assert secret not in issued.secret_hmac
    assert secret_matches(secret, issued.secret_hmac, PEPPER)
    assert not secret_matches(secret, issued.secret_hmac, "another-pepper")
    assert not secret_matches(secret + "x", issued.secret_hmac, PEPPER)


def test_malformed_keys_do_not_split():
    for raw in (
        "",
        "sk-sy-",
        "sk-abc",
        "sk-sy-short-secret",
        "Bearer sk-sy-x",
        "sk-sy-" + "a" * 60,
    ):
        assert split_key(raw) is None
