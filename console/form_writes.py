"""The one shape of a console form write (SPEC D-30): the one predicate must say `edit`
(else 403, nothing written); the write validates and, when the form is good, calls the
service and says what it did; a bad form re-renders its page as a 400 with the problems and
writes nothing; a good one shows the message on the page it redirects to.

A write says a form is bad by raising `FormProblems`; `validated` raises it for a DRF
serializer with the management API's own 400 message, so the console and the API word a
problem the same way."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from rest_framework.exceptions import ValidationError
from rest_framework.serializers import Serializer

from console.access import Access, access
from management_api.base import invalid_request
from workspaces.permissions import Action

# Validates the form and calls the service; returns the message to show after the redirect.
Write = Callable[[HttpRequest, Access], str]
# The form's page again, showing the problems; answers 400.
PageWithProblems = Callable[[HttpRequest, Access, Sequence[str]], HttpResponse]


class FormProblems(Exception):
    """The form cannot be written, for these reasons (each as the page shows it); nothing
    was written."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = tuple(problems)


def validated(body: Serializer[Any]) -> Any:
    """`body`'s validated data; `FormProblems` with every problem as `path: message`, joined
    as the management API's 400 says them, when the form is invalid."""
    try:
        body.is_valid(raise_exception=True)
    except ValidationError as error:
        raise FormProblems((str(invalid_request(error).detail),)) from error
    return body.validated_data


def write_form(
    request: HttpRequest, ws: str, write: Write, *, again: PageWithProblems, then: str
) -> HttpResponse:
    """Run `write` for the workspace `ws` if the user may edit it, then redirect to the view
    named `then` with its message; on `FormProblems`, `again` renders the form's page."""
    seen = access(request.user, ws)
    seen.require(Action.EDIT)
    try:
        done = write(request, seen)
    except FormProblems as error:
        return again(request, seen, error.problems)
    messages.success(request, done)
    return redirect(then, ws=seen.workspace.slug)
