"""A few requests through the demo gateway when `make run` starts it, so the console's
request log, traces and live page have something to show: plain and routed models, a tier
alias, the auto router, an EU-only request, a stream, embeddings, and two refusals (a
model the catalog lacks, an impossible residency). Best effort: a failure is reported,
never fatal."""

from __future__ import annotations

from typing import Any

import httpx

HELLO = [{"role": "user", "content": "Hello"}]
HARD_TEXT = (
    "Prove that there are infinitely many primes, step by step, then write a "
    "Python function that tests primality."
)
HARD = [{"role": "user", "content": HARD_TEXT}]
REQUESTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("/chat/completions", {"model": "meta/llama-3.3-70b", "messages": HELLO}),
    (
        "/chat/completions",
        {"model": "support", "messages": HELLO, "metadata": {"customer_plan": "pro"}},
    ),
    (
        "/chat/completions",
        {"model": "support", "messages": HELLO, "metadata": {"customer_plan": "free"}},
    ),
    ("/chat/completions", {"model": "normal", "messages": HELLO}),
    ("/chat/completions", {"model": "normal", "messages": HARD}),
    ("/chat/completions", {"model": "auto", "messages": HARD}),
    (
        "/chat/completions",
        {"model": "meta/llama-3.3-70b", "messages": HELLO, "residency": "eu-owned"},
    ),
    (
        "/chat/completions",
        {"model": "anthropic/claude-sonnet-4", "messages": HELLO, "max_tokens": 40, "stream": True},
    ),
    ("/embeddings", {"model": "openai/text-embedding-3-small", "input": "Hello"}),
    ("/chat/completions", {"model": "vendor/no-such-model", "messages": HELLO}),
    (
        "/chat/completions",
        {"model": "anthropic/claude-sonnet-4", "messages": HELLO, "residency": "eu-owned"},
    ),
)


def send_demo_traffic(base_url: str, key: str, rounds: int = 3) -> tuple[int, int]:
    """(answered, refused) after `rounds` passes over REQUESTS."""
    answered = refused = 0
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=f"{base_url}/v1", headers=headers, timeout=30) as client:
        for _ in range(rounds):
            for path, body in REQUESTS:
                try:
                    status = client.post(path, json=body).status_code
                except httpx.HTTPError:
                    status = 0
                answered, refused = (
                    (answered + 1, refused) if status == 200 else (answered, refused + 1)
                )
    return answered, refused
