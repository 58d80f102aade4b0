"""Data classes through a live gateway (SPEC R-POL-1, D-22): a class the policy does not
allow is refused before routing; an endpoint not cleared for the request's class is
rejected with its literal reason. An embeddings model of its own, so that no other test's
routing (the auto router's candidates are chat models) can reach its endpoint."""

from __future__ import annotations

import openai
import pytest

from tests.live.installation import Live

pytestmark = pytest.mark.live

HEADER = "X-Switchyard-Data-Class"
MODEL = "acme/public-embed"


@pytest.fixture(scope="module")
def classified(live: Live) -> openai.OpenAI:
    path = live.log_path.parent / "data-classes.yaml"
    path.write_text(f"""\
models:
  - {{slug: {MODEL}, capabilities: [embedding], context_window: 8191}}
endpoints:
  - {{id: cheap-public-embed, provider: cheap, model: {MODEL}, upstream_model: embed-up,
      region: us-east-1, price: {{input: 0.02, output: 0}}, data_classes: [public]}}
workspaces:
  - slug: classified
    policy: {{data_classes: [internal, public], max_attempts: 2}}
""")  # fmt: skip
    live.manage("apply", "-f", str(path))
    key = live.manage("createkey", "--workspace", "classified").strip()
    client = openai.OpenAI(base_url=live.base_url, api_key=key, max_retries=0, timeout=20)
    # the new key, then the new model, reach the gateway within a poll or two
    live.wait_for_key(key)
    live.wait_for_model(client, MODEL)
    return client


def test_d_22_an_endpoint_serves_only_the_classes_it_is_cleared_for(fresh_live, classified):
    # when a request names a class the endpoint is cleared for
    answer = classified.embeddings.create(model=MODEL, input="hi", extra_headers={HEADER: "public"})
    # then it is served
    assert len(answer.data) == 1
    # when it names none: the policy's first class, `internal`, which the endpoint is not
    with pytest.raises(openai.ConflictError) as refused:
        classified.embeddings.create(model=MODEL, input="hi")
    # then the endpoint is rejected with the literal reason, before any call
    assert refused.value.body["excluded"] == [
        {"endpoint": "cheap-public-embed", "reason": "data_class_not_cleared"}
    ]
    assert fresh_live.fakes["cheap"].stats()["requests"] == 1


def test_d_22_a_class_the_policy_does_not_allow_is_403_before_routing(fresh_live, classified):
    with pytest.raises(openai.PermissionDeniedError) as refused:
        classified.chat.completions.create(
            model="meta/llama-3.3-70b",
            messages=[{"role": "user", "content": "hi"}],
            metadata={"data_class": "pii"},
        )
    assert refused.value.code == "data_class_not_allowed"
    assert all(fake.stats()["requests"] == 0 for fake in fresh_live.fakes.values())


def test_d_22_explain_shows_the_request_class(fresh_live, classified):
    # when
    explained = fresh_live.explain(
        classified.api_key,
        {"model": "meta/llama-3.3-70b", "messages": [{"role": "user", "content": "hi"}]},
        headers={HEADER: "public"},
    )
    # then
    assert explained["request"]["data_class"] == "public"
