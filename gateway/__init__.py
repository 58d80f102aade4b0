"""Switchyard's Django project package: settings, URLs, ASGI app, the /v1 API and the
upstream path."""
