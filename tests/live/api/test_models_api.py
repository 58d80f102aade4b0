"""`GET /v1/models` and `GET /v1/models/{id}` (SPEC D-7, R-BEY-10): the catalog models a
key may use, and the names that route to them — virtual models, tiered aliases, `auto` —
with a real `created` time, through the official SDK."""

from __future__ import annotations

import httpx
import openai
import pytest

pytestmark = pytest.mark.live


def _client(live, workspace: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=live.base_url, api_key=live.keys[workspace], max_retries=0)


def test_the_list_holds_the_routing_names_beside_the_catalog_models(fresh_live):
    # when
    models = {m.id: m for m in _client(fresh_live, "acme").models.list()}
    # then virtual models, the workspace's tiered alias and auto are there too
    assert {"meta/llama-3.3-70b", "duo-adaptive", "duo-round-robin", "normal", "auto"} <= set(
        models
    )
    assert models["normal"].owned_by == "switchyard"
    assert models["meta/llama-3.3-70b"].owned_by == "meta"
    assert all(m.created > 1_600_000_000 for m in models.values())


def test_another_workspace_does_not_see_an_alias_it_has_not_configured(fresh_live):
    listed = {m.id for m in _client(fresh_live, "other").models.list()}
    assert "normal" not in listed
    assert "auto" in listed


def test_one_model_by_its_id_slashes_included(fresh_live):
    # when
    model = _client(fresh_live, "acme").models.retrieve("meta/llama-3.3-70b")
    # then it is the list's entry
    assert (model.id, model.object, model.owned_by) == ("meta/llama-3.3-70b", "model", "meta")
    assert _client(fresh_live, "acme").models.retrieve("normal").owned_by == "switchyard"


@pytest.mark.parametrize(
    ("workspace", "model_id"), [("acme", "vendor/nope"), ("euonly", "meta/llama-3.3-70b")]
)
def test_a_model_the_key_may_not_use_is_a_404(fresh_live, workspace, model_id):
    with pytest.raises(openai.NotFoundError) as caught:
        _client(fresh_live, workspace).models.retrieve(model_id)
    assert caught.value.body["code"] == "model_not_found"


def test_a_bad_key_is_a_401_here_too(fresh_live):
    response = httpx.get(f"{fresh_live.base_url}/models/meta/llama-3.3-70b",
                         headers={"Authorization": "Bearer sk-sy-nope-nope"})  # fmt: skip
    assert response.status_code == 401
