"""Running the fake: listen on host:port with uvloop, answer until SIGINT or SIGTERM.

One process, one event loop: the fake answers from memory, so one core serves far more
than the gateway under benchmark sends it (numbers in docs/fakeupstream.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from dataclasses import dataclass

try:
    import uvloop
except ImportError:  # e.g. on Windows; the plain asyncio loop works too, only slower
    uvloop = None  # type: ignore[assignment]

from fakeupstream.connection import Connection
from fakeupstream.profiles import FakeSettings
from fakeupstream.routes import FakeUpstream

logger = logging.getLogger("fakeupstream")

# Pending-connection queue: a benchmark opening hundreds of connections at once must not
# see refused connects.
LISTEN_BACKLOG = 2048
# Shutdown waits this long for closed connections to finish detaching, then exits anyway:
# a stop must never hang the test or benchmark that asked for it.
SHUTDOWN_GRACE_S = 1.0


@dataclass(frozen=True, slots=True)
class ServerConfig:
    host: str
    port: int
    profile: str
    settings: FakeSettings


def run(config: ServerConfig) -> None:
    """Serve in this process until interrupted; uses uvloop when it is installed."""
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if uvloop is None:
        asyncio.run(serve(config))
    else:
        uvloop.run(serve(config))


async def serve(config: ServerConfig, stop: asyncio.Event | None = None) -> None:
    """Serve until `stop` is set, or until SIGINT/SIGTERM when no event is given."""
    loop = asyncio.get_running_loop()
    handler = FakeUpstream(config.settings)
    connections: set[Connection] = set()
    server = await loop.create_server(
        lambda: Connection(handler, connections), config.host, config.port, backlog=LISTEN_BACKLOG
    )
    if stop is None:
        stop = asyncio.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
    logger.info(
        "fake upstream %r (profile %s) listening on http://%s:%d",
        config.settings.name,
        config.profile,
        config.host,
        config.port,
    )
    try:
        await stop.wait()
    finally:
        server.close()
        for conn in list(connections):
            conn.close()  # also ends hanging requests: their tasks are cancelled
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(server.wait_closed(), SHUTDOWN_GRACE_S)
