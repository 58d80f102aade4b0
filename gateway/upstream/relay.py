"""Relaying a committed stream (`Opened`) to the client: its buffered frames, the rest of
the upstream within the idle timeout and the request's total deadline, then the tail the
caller makes of it; `abandon` when the client left before the relay began. However the
stream ends, the upstream response is closed and the ending recorded once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import httpx

from gateway import drain
from gateway.upstream.attempt import Opened
from gateway.upstream.close import close_response, drop_connection

CLIENT_DISCONNECTED = "client disconnected"  # the one stream ending that is nobody's fault
DEADLINE_PASSED = "the request's total deadline passed"


async def relay(
    opened: Opened,
    *,
    tail: Callable[[Opened, str | None], list[bytes]],
    on_end: Callable[[Opened, str | None], None],
) -> AsyncIterator[bytes]:
    """Yield a committed stream to the client: buffered frames, the rest of the upstream,
    then `tail(opened, error)` (the switchyard block and [DONE], or an error event).
    Each read waits at most the idle timeout and never past the request's total deadline
    (SPEC D-20): a dripping upstream is cut off there with one error event. A client
    disconnect cancels this generator; `finally` closes the upstream and `on_end` records
    the outcome whichever way the stream ended."""
    opened.relayed = True
    chunks = opened.chunks
    translator = opened.translator
    idle_s = opened.target.idle_timeout_s
    loop = asyncio.get_running_loop()
    error: str | None = None
    completed = False
    try:
        if opened.buffered:  # one write for what the commit check read (with a Messages
            yield b"".join(opened.buffered)  # stream's opening events)
        while not translator.finished:
            left_s = opened.deadline_at - loop.time()
            if left_s <= 0:
                error = DEADLINE_PASSED
                break
            try:
                async with asyncio.timeout(min(idle_s, left_s)):
                    chunk = await anext(chunks, None)
            except TimeoutError:
                error = "upstream stream stalled" if left_s > idle_s else DEADLINE_PASSED
                break
            except httpx.HTTPError:
                error = "upstream stream broke"
                break
            if chunk is None:
                if not translator.finished:
                    error = "upstream stream ended early"
                break
            frames = translator.feed(chunk)
            if frames:
                yield b"".join(frames)
            if translator.error:
                error = opened.target.safe(translator.error[1] or translator.error[0])
                break
        # One write: the client's end of the answer (`[DONE]`, `message_stop`) is in it,
        # and each write is an event-loop turn of the server's.
        ending = tail(opened, error)
        if ending:
            yield b"".join(ending)
        completed = True
    finally:
        if not completed and error is None:  # cancelled or closed while relaying
            error = drain.CUT_SHORT if drain.current.cut else CLIENT_DISCONNECTED
        if not translator.finished:
            drop_connection(opened.response)
        await close_opened(opened)
        on_end(opened, error)


async def abandon(opened: Opened, on_end: Callable[[Opened, str | None], None]) -> None:
    """The client left before `relay` ever ran (between the view returning the response
    and the server iterating it): close the upstream and record the disconnect. A no-op
    once `relay` has started, which does both itself."""
    if opened.relayed:
        return
    opened.relayed = True
    drop_connection(opened.response)
    await close_opened(opened)
    on_end(opened, CLIENT_DISCONNECTED)


async def close_opened(opened: Opened) -> None:
    """Close a committed stream's upstream response; safe to call more than once."""
    await close_response(opened.response)
