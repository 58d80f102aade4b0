"""The one pooled HTTP client per process for upstream calls.

httpx is the API; its transport is aiohttp by default because it measured fastest under
the benchmark (docs/decisions/0002-http-transport.md). `SWITCHYARD_HTTP_TRANSPORT=httpx`
selects httpx's own transport, for comparison or if aiohttp misbehaves.
"""

from __future__ import annotations

import os

import httpx

_client: httpx.AsyncClient | None = None


def make_client(pool_size: int, transport_name: str | None = None) -> httpx.AsyncClient:
    limits = httpx.Limits(
        max_connections=pool_size, max_keepalive_connections=pool_size, keepalive_expiry=30.0
    )
    name = transport_name or os.environ.get("SWITCHYARD_HTTP_TRANSPORT", "aiohttp")
    if name == "aiohttp":
        from httpx_aiohttp import AiohttpTransport

        transport: httpx.AsyncBaseTransport = AiohttpTransport(limits=limits, trust_env=False)
    elif name == "httpx":
        transport = httpx.AsyncHTTPTransport(limits=limits, trust_env=False)
    else:
        raise ValueError(f"SWITCHYARD_HTTP_TRANSPORT must be aiohttp or httpx, not {name!r}")
    # Timeouts are enforced by the executor with asyncio.timeout (connect, first byte,
    # idle, total); httpx's read timeout resets on every chunk, so it is not relied on.
    return httpx.AsyncClient(transport=transport, timeout=None, trust_env=False)


def get_client(pool_size: int) -> httpx.AsyncClient:
    """The process's client, created on first use inside the running event loop."""
    global _client
    if _client is None or _client.is_closed:
        _client = make_client(pool_size)
    return _client


async def close_client() -> None:
    global _client
    if _client is not None:
        await _client.aclose()
        _client = None
