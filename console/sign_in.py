"""Signing in and out of the console, and where a signed-in person lands.

Sign-in is Django's own (`LoginView`: CSRF, session rotation, a safe `next`), with a
throttle in front: after `MAX_FAILURES` wrong passwords for one username from one
address within `WINDOW_S`, that pair is refused until the window has passed — a wrong
password and a locked account look alike, so the form tells an attacker nothing. The
counts live in Django's cache (per worker with the default local-memory cache; shared
when CACHES points at Redis)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from console.access import memberships

MAX_FAILURES = 5
WINDOW_S = 300
LOCKED = "Too many failed sign-ins. Wait a few minutes and try again."


def _throttle_key(request: HttpRequest, username: str) -> str:
    address = request.META.get("REMOTE_ADDR", "")
    return f"console:sign-in:{address}:{username.strip().lower()[:150]}"


class ThrottledAuthenticationForm(AuthenticationForm):
    def clean(self) -> dict[str, Any]:
        username = self.data.get("username", "")
        key = _throttle_key(self.request, username)  # type: ignore[arg-type]
        if cache.get(key, 0) >= MAX_FAILURES:
            raise ValidationError(LOCKED, code="throttled")
        try:
            return super().clean()
        except ValidationError:
            try:
                cache.incr(key)
            except ValueError:  # first failure of the window
                cache.set(key, 1, WINDOW_S)
            raise


class SignIn(auth_views.LoginView):
    template_name = "console/sign_in.html"
    authentication_form = ThrottledAuthenticationForm
    redirect_authenticated_user = True


class SignOut(auth_views.LogoutView):
    next_page = "console:sign-in"


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """The first workspace's request log; a page that says so when there is none."""
    mine = memberships(request.user)
    if mine:
        return redirect("console:requests", ws=mine[0][0])
    return render(request, "console/no_workspace.html", status=200)
