"""Which of a key's routes handles a request (SPEC D-23): the routes are tried in the order
the key lists them and the first whose `models` patterns match the requested model handles
it; when none matches, the request is resolved as usual (R-MOD-2). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase

from routing.engine.routes.graph import Route


def route_for(routes: Sequence[Route], requested_model: str) -> Route | None:
    """The first route with a pattern matching `requested_model` as the client wrote it.
    Case-sensitive shell globs (`support-*`, `*`), the same on every platform."""
    return next((route for route in routes if handles(route, requested_model)), None)


def handles(route: Route, requested_model: str) -> bool:
    """Does one of the route's `models` patterns match the model as the client wrote it?"""
    return any(fnmatchcase(requested_model, pattern) for pattern in route.models)
