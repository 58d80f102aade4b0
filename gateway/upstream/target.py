"""An endpoint ready to call (`Target`): where it is, its API style, the credential and
the timeouts an attempt on it keeps, and the other secrets its upstream text must never
carry back."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.upstream.untrusted_text import scrub
from routing.engine.types import EndpointInfo


@dataclass(frozen=True, slots=True)
class Target:
    """An endpoint ready to call: where, how, with which credential and timeouts."""

    endpoint: EndpointInfo
    base_url: str
    api_style: str  # openai | anthropic
    api_key: str
    connect_timeout_s: float
    ttfb_timeout_s: float
    idle_timeout_s: float
    # Other secrets upstream text must never carry back (the caller's own workspace key,
    # which a client may paste into a prompt the upstream then echoes).
    redact: tuple[str, ...] = ()
    own_credential: bool = False  # `api_key` is the workspace's own (BYOK), not the managed one

    def safe(self, upstream_text: str) -> str:
        """Upstream text with this attempt's credentials cut out (SPEC D-17)."""
        return scrub(upstream_text, (self.api_key, *self.redact))
