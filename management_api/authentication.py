"""Who is calling the management API (`/api/v1/`, SPEC R-MGT-1).

Two ways in, tried in this order:

- `Authorization: Bearer sy-mt-<lookup>-<secret>`: a management token, bound to one
  workspace and one role (`ManagementTokenAuthentication`). A header that is there but
  unknown, malformed, revoked or of another scheme is a 401 with one body for all (like
  D-3 for API keys); a `/v1` API key is malformed here. Tokens need no CSRF token.
- The console's Django session (DRF's `SessionAuthentication`, which enforces CSRF on
  unsafe methods); the role is the user's Membership in the workspace of the URL.

What a request may do in that workspace is decided afterwards, in `management_api.base`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from workspaces.keys import secret_matches, split_token
from workspaces.models import ManagementToken

# `last_used_at` is written at most once a minute per token: a script polling the API
# should not turn every read into a write.
LAST_USED_RESOLUTION = timedelta(minutes=1)
BEARER = "bearer"


class InvalidToken(exceptions.AuthenticationFailed):
    """The 401 of every failure to authenticate: missing, unknown, malformed, revoked."""

    default_detail = (
        "Missing or invalid credentials: send `Authorization: Bearer <management token>` "
        "or log in to the console."
    )
    default_code = "invalid_token"


@dataclass(frozen=True, slots=True)
class TokenUser:
    """`request.user` of a token-authenticated request; `request.auth` is the token."""

    token: ManagementToken
    is_authenticated = True
    is_anonymous = False
    is_active = True

    def get_username(self) -> str:
        return f"token:{self.token.name}"


def verify_management_token(raw: str) -> ManagementToken | None:
    """The live token `raw` is, or None (unknown, malformed, revoked, wrong secret)."""
    parts = split_token(raw)
    if parts is None:
        return None
    lookup_id, secret = parts
    live = ManagementToken.objects.active().select_related("workspace")
    token = live.filter(lookup_id=lookup_id).first()
    pepper = settings.SWITCHYARD_KEY_PEPPER
    if token is None or not secret_matches(secret, token.secret_hmac, pepper):
        return None
    return token


def _touch(token: ManagementToken) -> None:
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        ManagementToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now


class ManagementTokenAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        header = request.headers.get("Authorization")
        if header is None:
            return None  # maybe a console session; no credentials at all is a 401 later
        scheme, _, raw = header.strip().partition(" ")
        token = verify_management_token(raw.strip()) if scheme.lower() == BEARER else None
        if token is None:
            raise InvalidToken()
        _touch(token)
        return TokenUser(token), token

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="switchyard-management"'
