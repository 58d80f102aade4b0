"""The explain playground's doors (SPEC R-BEY-2, D-30): every member may open it; running
an explanation needs `use` (member and above), so a viewer's POST is refused; an outsider
gets 404; extras that are not JSON are a 400 naming the field, before anything runs. The
explanation itself is driven live in tests/browser/test_console_browser.py."""

from __future__ import annotations

import pytest

from workspaces.services import create_api_key

pytestmark = pytest.mark.django_db
URL = "/console/acme/explain/"


@pytest.fixture
def key(acme):
    return create_api_key(acme, name="explainer", actor="test").api_key


def _form(key, **extra: str) -> dict[str, str]:
    return {"key": key.lookup_id, "model": "m/x", "message": "hi", **extra}


def test_d_30_every_member_opens_the_playground_and_only_users_run_it(acme, people, key):
    for role in ("owner", "admin", "member", "viewer"):
        page = people[role].get(URL)
        assert page.status_code == 200, role
        assert (b"<fieldset disabled>" in page.content) == (role == "viewer"), role
        assert b"explainer" in page.content
    assert people["viewer"].post(URL, _form(key)).status_code == 403
    assert people["outsider"].get(URL).status_code == 404
    assert people["outsider"].post(URL, _form(key)).status_code == 404


def test_r_bey_2_extras_that_are_not_json_are_a_400_naming_the_field(acme, people, key):
    answer = people["member"].post(URL, _form(key, provider='{"order": [groq]}'))
    assert answer.status_code == 400
    assert b"`provider` is not JSON" in answer.content
