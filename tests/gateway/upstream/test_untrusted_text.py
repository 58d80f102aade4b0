"""Upstream text made safe (SPEC D-17): credentials cut out, exactly and by fragment."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gateway.upstream.untrusted_text import MAX_MESSAGE_CHARS, MIN_FRAGMENT_CHARS, REDACTED, scrub

KEY = "sk-proj-4f9XqL2mTz8KpW1vB7nR"


def test_the_exact_key_is_cut_out():
    assert scrub(f"Incorrect API key provided: {KEY}.", [KEY]) == (
        f"Incorrect API key provided: {REDACTED}."
    )


def test_a_quoted_fragment_of_eight_characters_is_cut_out():
    # given a provider that quotes the key's start and end, as OpenAI does ("sk-proj-…vB7nR")
    text = f"Incorrect API key provided: {KEY[:12]}************{KEY[-8:]}."
    # then
    assert scrub(text, [KEY]) == f"Incorrect API key provided: {REDACTED}************{REDACTED}."


def test_a_shorter_run_is_not_taken_for_the_key():
    assert scrub("use sk-proj keys", [KEY]) == "use sk-proj keys"


def test_every_credential_is_cut_and_control_characters_are_folded():
    other = "wsk-9c1d2e3f4a5b6c7d"
    text = f"a={KEY}\nb={other}\x00"
    assert scrub(text, [KEY, other]) == f"a={REDACTED} b={REDACTED} "


def test_long_text_is_cut_to_the_message_limit():
    assert len(scrub("x" * 100_000, [KEY])) == MAX_MESSAGE_CHARS


alphabet = st.characters(codec="ascii", categories=("L", "N", "P"))


@given(
    secret=st.text(alphabet, min_size=MIN_FRAGMENT_CHARS, max_size=60),
    before=st.text(alphabet, max_size=40),
    after=st.text(alphabet, max_size=40),
    data=st.data(),
)
def test_no_fragment_of_eight_characters_survives(secret, before, after, data):
    # given any text around any fragment of 8+ characters of the secret
    start = data.draw(st.integers(0, len(secret) - MIN_FRAGMENT_CHARS))
    end = data.draw(st.integers(start + MIN_FRAGMENT_CHARS, len(secret)))
    # when
    safe = scrub(before + secret[start:end] + after, [secret])
    # then no window of the secret is left in it
    windows = {secret[i : i + MIN_FRAGMENT_CHARS] for i in range(len(secret) - 7)}
    assert not any(safe[i : i + MIN_FRAGMENT_CHARS] in windows for i in range(len(safe) - 7)), safe
