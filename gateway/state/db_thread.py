"""The one thread in which a gateway worker talks to its database.

The API path runs without Django's request signals (gateway/asgi.py), which is what closes
a request's connections; and Django's ASGI handler gives every request a thread-sensitive
context of its own, so a `sync_to_async` query from a request (or from a task it started:
the snapshot's version poll, the trace flush) ran in a new thread with a new connection,
left for the garbage collector to close. On PostgreSQL they piled up to "too many clients"
once collections became rare (the collector is tuned for many held requests). Here every
query runs in one thread, with one connection, kept open across calls (whatever
`CONN_MAX_AGE` says: that is for the request threads of the management API and console)
and dropped before a call once an error has left it unusable, e.g. after a database
restart."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from functools import wraps
from typing import ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.db import connections

P = ParamSpec("P")
R = TypeVar("R")

# One thread: the worker's database work is a few short queries a second at most, and one
# thread means one connection per worker, however many requests are in flight.
_EXECUTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="switchyard-db")


def in_db_thread(func: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """`func` as an awaitable that runs in the database thread."""

    @wraps(func)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        _drop_broken_connections()
        return func(*args, **kwargs)

    return sync_to_async(checked, thread_sensitive=False, executor=_EXECUTOR)


def _drop_broken_connections() -> None:
    """Django's `close_if_unusable_or_obsolete` without the age limit."""
    for conn in connections.all(initialized_only=True):
        if conn.connection is None:
            continue
        if conn.get_autocommit() != conn.settings_dict["AUTOCOMMIT"]:
            conn.close()  # a transaction left open: never reuse it
        elif conn.errors_occurred:
            if conn.is_usable():
                conn.errors_occurred = False
            else:
                conn.close()


def close_connections() -> None:
    """Close the database thread's connections now (tests that drop their database after
    serving requests in-process; otherwise they stay open until the thread ends)."""
    _EXECUTOR.submit(connections.close_all).result()
