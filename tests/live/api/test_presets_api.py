"""Presets and key settings through a live gateway (SPEC R-PRE-1, R-KEY-1, R-BEY-5, D-24):
applied with `manage.py apply` while the gateway runs, to a workspace of their own, with
keys made by `createkey --name`."""

from __future__ import annotations

import uuid

import openai
import pytest

from tests.live.installation import Live

pytestmark = pytest.mark.live

MESSAGES = [{"role": "user", "content": "Say hello"}]
MODEL = "meta/llama-3.3-70b"  # endpoints: cheap-llama (cheapest) and pricey-llama
PROMPT = "You answer ACME support questions."


def _apply(live: Live, workspace: str, body: str) -> None:
    path = live.log_path.parent / f"{workspace}-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(f"workspaces:\n  - slug: {workspace}\n{body}")
    live.manage("apply", "-f", str(path))


def _client(live: Live, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=live.base_url, api_key=key, max_retries=0, timeout=20)


def _key(live: Live, workspace: str, name: str) -> openai.OpenAI:
    return _client(live, live.new_key(workspace, name))


@pytest.fixture(scope="module")
def scoped(live: Live) -> dict[str, openai.OpenAI]:
    """Workspace `scoped` (price routing: cheap first) with a preset that allows only the
    `pricey` provider and only Llama, with a default prompt and temperature."""
    _apply(live, "scoped", f"""\
    policy: {{max_attempts: 3, routing_mode: price}}
    presets:
      - slug: support
        allowed_models: ["meta/*"]
        provider_allow: [pricey]
        default_prompt: "{PROMPT}"
        default_params: {{temperature: 0.2, max_tokens: 7}}
    keys:
      - {{name: support-bot, preset: support}}
      - {{name: tiny-only, allowed_models: [acme/tiny]}}
""")  # fmt: skip
    return {name: _key(live, "scoped", name) for name in ("support-bot", "tiny-only", "plain")}


def test_r_pre_1_defaults_fill_only_what_the_request_leaves_out(fresh_live, scoped):
    # when a request says nothing of the system prompt or temperature
    scoped["support-bot"].chat.completions.create(model=MODEL, messages=MESSAGES)
    # then the upstream got the preset's prompt first and its parameters
    sent = fresh_live.fakes["pricey"].stats()["last_request"]["body"]
    assert sent["messages"] == [{"role": "system", "content": PROMPT}, *MESSAGES]
    assert (sent["temperature"], sent["max_tokens"]) == (0.2, 7)
    # when a request sets its own
    own = [{"role": "system", "content": "Be terse."}, *MESSAGES]
    scoped["support-bot"].chat.completions.create(
        model=MODEL, messages=own, temperature=0.9, max_tokens=3
    )
    # then they are sent untouched
    sent = fresh_live.fakes["pricey"].stats()["last_request"]["body"]
    assert sent["messages"] == own
    assert (sent["temperature"], sent["max_tokens"]) == (0.9, 3)


def test_r_pre_1_a_model_outside_the_preset_is_403_and_calls_nothing(fresh_live, scoped):
    # when
    with pytest.raises(openai.PermissionDeniedError) as refused:
        scoped["support-bot"].chat.completions.create(model="acme/tiny", messages=MESSAGES)
    # then
    assert (refused.value.code, refused.value.body["param"]) == ("model_not_allowed", "model")
    assert all(fake.stats()["requests"] == 0 for fake in fresh_live.fakes.values())


def test_r_pre_1_a_disallowed_fallback_model_is_refused_too(fresh_live, scoped):
    with pytest.raises(openai.PermissionDeniedError) as refused:
        scoped["support-bot"].chat.completions.create(
            model=MODEL, messages=MESSAGES, extra_body={"models": [MODEL, "acme/mini"]}
        )
    assert (refused.value.code, refused.value.body["param"]) == ("model_not_allowed", "models")


def test_r_bey_5_the_preset_narrows_failover(fresh_live, scoped):
    # given the preset's only provider fails
    fresh_live.fakes["pricey"].set_faults(["status:503"] * 3)
    # when
    with pytest.raises(openai.APIStatusError) as failed:
        scoped["support-bot"].chat.completions.create(model=MODEL, messages=MESSAGES)
    # then no retry left the preset: the cheaper provider outside it was never called
    assert failed.value.status_code == 503
    assert [a["provider"] for a in failed.value.body["attempts"]] == ["pricey"]
    assert fresh_live.fakes["cheap"].stats()["requests"] == 0
    # while a key without the preset is routed to the cheaper provider first
    fresh_live.fakes["pricey"].reset()
    answer = scoped["plain"].chat.completions.create(model=MODEL, messages=MESSAGES)
    assert answer.model_extra["switchyard"]["endpoint"] == "cheap-llama"


def test_r_key_1_models_lists_only_what_the_key_may_use(fresh_live, scoped):
    assert {m.id for m in scoped["tiny-only"].models.list()} == {"acme/tiny", "auto"}
    listed = {m.id for m in scoped["support-bot"].models.list()}
    assert MODEL in listed
    assert "acme/tiny" not in listed
    assert "acme/paced" not in listed  # a Llama-free catalog model
    with pytest.raises(openai.PermissionDeniedError):
        scoped["tiny-only"].chat.completions.create(model=MODEL, messages=MESSAGES)


def test_d_24_settings_written_before_the_key_apply_once_it_exists(fresh_live):
    # given settings for a name that has no key yet, expiring yesterday
    _apply(fresh_live, "expiring", """\
    policy: {max_attempts: 1}
    keys:
      - {name: old-bot, expires_at: 2020-01-01}
""")  # fmt: skip
    # when the key of that name is created
    key = fresh_live.manage("createkey", "--workspace", "expiring", "--name", "old-bot").strip()
    # (and one of another name after it: once the gateway accepts that one, its snapshot
    # holds both keys)
    other = _key(fresh_live, "expiring", "new-bot")
    # then it is expired: the same 401 as an unknown key (D-30)
    with pytest.raises(openai.AuthenticationError) as refused:
        _client(fresh_live, key).models.list()
    assert refused.value.code == "invalid_api_key"
    # and a key of another name in the same workspace works
    assert other.models.list().data
