"""Text an upstream sends is untrusted (SPEC D-17): the one place it is made safe.

Real providers echo what they were given — "Incorrect API key provided: sk-…", "your
messages: … are too long". Such text may reach the client that sent the request (it sent
the prompt), but only after every credential used for the attempt has been cut out of it:
the exact secret and any run of 8 or more of its characters, since providers often quote a
key partly ("sk-abc…wxyz"). Nothing the upstream wrote is ever stored, logged or used as a
metric label: the attempt keeps its error kind, HTTP status and the gateway's own message.

Pure: no Django, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable

# A quoted fragment this long is taken as a piece of the secret; shorter runs ("sk-proj-")
# are common prefixes that say nothing about the key itself.
MIN_FRAGMENT_CHARS = 8
# Upstream messages shown to a client are cut to this length: enough for any real
# provider's sentence, not enough to relay a whole echoed prompt or an HTML page.
MAX_MESSAGE_CHARS = 1000
REDACTED = "[redacted]"


def scrub(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret and every fragment of 8+ characters of one replaced by
    `[redacted]`, control characters folded to spaces, cut to MAX_MESSAGE_CHARS."""
    text = "".join(ch if ch.isprintable() else " " for ch in text[: MAX_MESSAGE_CHARS * 4])
    for secret in secrets:
        if len(secret) >= MIN_FRAGMENT_CHARS:
            text = _cut_fragments(text, secret)
        elif secret:
            text = text.replace(secret, REDACTED)
    return text[:MAX_MESSAGE_CHARS]


def _cut_fragments(text: str, secret: str) -> str:
    """Mark every position covered by an 8-character window that also occurs in the
    secret, then replace each marked run. Linear in the text for one secret."""
    size = MIN_FRAGMENT_CHARS
    windows = {secret[i : i + size] for i in range(len(secret) - size + 1)}
    covered = bytearray(len(text))
    for start in range(len(text) - MIN_FRAGMENT_CHARS + 1):
        if text[start : start + MIN_FRAGMENT_CHARS] in windows:
            covered[start : start + MIN_FRAGMENT_CHARS] = b"\x01" * MIN_FRAGMENT_CHARS
    if not any(covered):
        return text
    out: list[str] = []
    index = 0
    while index < len(text):
        if covered[index]:
            while index < len(text) and covered[index]:
                index += 1
            out.append(REDACTED)
        else:
            out.append(text[index])
            index += 1
    return "".join(out)
