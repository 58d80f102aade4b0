"""Smart tier classification and the tier choice (SPEC R-TIER-1..4, D-8, D-9)."""

from __future__ import annotations

from typing import Any

import pytest

from routing.engine.tiers.choose import (
    DEFAULT_EFFORT_KEYWORDS,
    DEFAULT_SESSION_TTL_S,
    DEFAULT_THRESHOLD,
    Signal,
    TierAlias,
    TierConfig,
    Verdict,
    choose_tier,
    classify,
    tier_config,
    verdict_headers,
)
from routing.engine.tiers.pins import InProcessTierPins, pin_key

NOW = 1_767_225_600.0
SESSION = "7:11:header:conv-1"
PROSE = "The service logs look normal and the dashboards are green again. "
SNIPPET = "Why does this fail?\n```python\nprint(1 / 0)\n```\n"
NORMAL = TierAlias(name="normal", easy="normal-easy", hard="normal-hard", default="easy")


def _config(**overrides: Any) -> TierConfig:
    raw = {"aliases": {"normal": {"easy": "normal-easy", "hard": "normal-hard"}}, **overrides}
    config = tier_config(raw)
    assert config is not None
    return config


CONFIG = _config()


def _filler(chars: int) -> str:
    """Plain prose of exactly `chars` characters that triggers no signal but context."""
    return (PROSE * (chars // len(PROSE) + 1))[:chars]


def _user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def _tools(count: int) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": f"tool_{i}", "parameters": {"type": "object"}}}
        for i in range(count)
    ]


# R-TIER-2 calibration: each case must hold with the defaults.


def test_r_tier_2_calibration_short_code_alone_is_3_easy():
    # given
    body = _user(SNIPPET)
    # when
    verdict = classify(body, CONFIG)
    # then
    assert verdict == Verdict(
        "easy", 3, (Signal("code", 3, "fenced code block in message 1"),), "classifier"
    )


def test_r_tier_2_calibration_code_plus_2k_characters_is_4_hard():
    # given
    body = _user(SNIPPET + _filler(2_000 - len(SNIPPET)))
    # when
    verdict = classify(body, CONFIG)
    # then
    assert verdict == Verdict(
        "hard",
        4,
        (
            Signal("code", 3, "fenced code block in message 1"),
            Signal("context", 1, "2,000 characters"),
        ),
        "classifier",
    )


def test_r_tier_2_calibration_effort_keyword_alone_is_4_hard():
    # given
    body = _user("What is the root cause of yesterday's outage?")
    # when
    verdict = classify(body, CONFIG)
    # then
    assert verdict == Verdict(
        "hard", 4, (Signal("effort_keyword", 4, "effort keyword 'root cause'"),), "classifier"
    )


def test_r_tier_2_calibration_five_tools_alone_is_4_hard():
    # given
    body = {**_user("Book me a table for two."), "tools": _tools(5)}
    # when
    verdict = classify(body, CONFIG)
    # then
    assert verdict == Verdict("hard", 4, (Signal("tools", 4, "5 tools declared"),), "classifier")


def test_r_tier_2_calibration_8k_characters_alone_is_3_easy():
    # given
    body = _user(_filler(8_000))
    # when
    verdict = classify(body, CONFIG)
    # then
    assert verdict == Verdict("easy", 3, (Signal("context", 3, "8,000 characters"),), "classifier")


def test_r_tier_2_calibration_32k_characters_alone_is_6_hard():
    # given
    body = _user(_filler(32_000))
    # when
    verdict = classify(body, CONFIG)
    # then
    assert verdict == Verdict("hard", 6, (Signal("context", 6, "32,000 characters"),), "classifier")


# R-TIER-2: explicit reasoning requests go to hard at once.


@pytest.mark.parametrize(
    ("field", "effort", "detail"),
    [
        ("reasoning_effort", "medium", "reasoning_effort 'medium'"),
        ("reasoning_effort", "high", "reasoning_effort 'high'"),
        ("reasoning_effort", "xhigh", "reasoning_effort 'xhigh'"),
        ("reasoning_effort", " High ", "reasoning_effort 'high'"),
        ("reasoning", {"effort": "medium"}, "reasoning.effort 'medium'"),
    ],
)
def test_r_tier_2_reasoning_effort_medium_or_above_is_hard_at_once(field, effort, detail):
    # given a request that would otherwise score 0
    body = {**_user("hi"), field: effort}
    # when
    verdict = classify(body, CONFIG)
    # then the score is reported as the threshold
    assert verdict == Verdict("hard", 4, (Signal("reasoning_effort", 4, detail),), "immediate")


@pytest.mark.parametrize("effort", ["none", "minimal", "low", "extreme", 3, None])
def test_r_tier_2_reasoning_effort_below_medium_is_classified(effort):
    # given
    body = {**_user("hi"), "reasoning_effort": effort}
    # when
    verdict = classify(body, CONFIG)
    # then
    assert verdict == Verdict("easy", 0, (), "classifier")


@pytest.mark.parametrize(
    ("thinking", "detail"),
    [
        ({"type": "enabled", "budget_tokens": 16000}, "thinking enabled (16,000 token budget)"),
        ({"type": "enabled"}, "thinking enabled"),
        ({"type": "adaptive"}, "thinking adaptive"),
    ],
)
def test_r_tier_2_anthropic_thinking_block_is_hard_at_once(thinking, detail):
    # given
    body = {**_user("hi"), "thinking": thinking}
    # when
    verdict = classify(body, _config(threshold=6))
    # then
    assert verdict == Verdict("hard", 6, (Signal("thinking", 6, detail),), "immediate")


@pytest.mark.parametrize("thinking", [{"type": "disabled"}, {"type": ["enabled"]}, "enabled"])
def test_r_tier_2_thinking_disabled_or_malformed_is_classified(thinking):
    # given
    body = {**_user("hi"), "thinking": thinking}
    # when
    verdict = classify(body, CONFIG)
    # then
    assert verdict == Verdict("easy", 0, (), "classifier")


# R-TIER-2, D-9: effort keywords.


@pytest.mark.parametrize(
    ("text", "keyword"),
    [
        ("Please THINK HARD about this.", "think hard"),
        ("Think harder, please.", "think hard"),
        ("Explain it Step-By-Step.", "step-by-step"),
        ("Let's do a deep dive into the billing code.", "deep dive"),
    ],
)
def test_d_9_effort_keywords_match_case_insensitively_as_substrings(text, keyword):
    # given
    body = _user(text)
    # when
    verdict = classify(body, CONFIG)
    # then
    assert verdict.signals == (Signal("effort_keyword", 4, f"effort keyword '{keyword}'"),)


def test_d_9_default_effort_keywords_include_the_three_named():
    assert {"think hard", "step by step", "root cause"} <= set(DEFAULT_EFFORT_KEYWORDS)


def test_r_tier_2_effort_keyword_counts_only_in_the_latest_user_message():
    # given the keyword in an earlier user turn and in the assistant's reply
    body = {
        "messages": [
            {"role": "user", "content": "Find the root cause, step by step."},
            {"role": "assistant", "content": "The root cause is a stale cache."},
            {"role": "user", "content": "thanks!"},
        ]
    }
    # when
    verdict = classify(body, CONFIG)
    # then
    assert verdict == Verdict("easy", 0, (), "classifier")


def test_r_tier_2_effort_keyword_in_text_parts_of_the_latest_user_message():
    # given
    body = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Here is the log."},
                    {"type": "text", "text": "Go step by step."},
                ],
            }
        ]
    }
    # when
    verdict = classify(body, CONFIG)
    # then
    assert verdict.signals == (Signal("effort_keyword", 4, "effort keyword 'step by step'"),)


def test_d_9_configured_effort_keywords_replace_the_defaults():
    # given
    config = _config(effort_keywords=["Schritt für Schritt"])
    # when
    german = classify(_user("Erkläre es SCHRITT FÜR SCHRITT."), config)
    default = classify(_user("Find the root cause."), config)
    # then
    assert german.signals == (Signal("effort_keyword", 4, "effort keyword 'Schritt für Schritt'"),)
    assert default.signals == ()


def test_d_9_one_effort_signal_names_the_first_configured_keyword_found():
    # given
    body = _user("Think hard and go step by step to the root cause.")
    # when
    verdict = classify(body, CONFIG)
    # then
    assert verdict.signals == (Signal("effort_keyword", 4, "effort keyword 'think hard'"),)


# R-TIER-2: code or diagnostics, the exact rule.


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("look:\n```\nx = 1\n```", "fenced code block"),
        ("inline ```x = 1``` works too", "fenced code block"),
        ("diff --git a/app.py b/app.py\nindex 1..2", "diff --git"),
        ("--- a/app.py\n+++ b/app.py\n@@ -1,3 +1,4 @@\n x", "unified diff hunk"),
        ("@@ -12 +12 @@ def main():", "unified diff hunk"),
        ("it says Traceback (most recent call last): then dies", "Python traceback"),
        ("panic: runtime error: index out of range [3]", "Go panic"),
        ("log\nthread 'main' panicked at src/main.rs:2:5:", "Rust panic"),
        ('  File "/app/main.py", line 12, in <module>', "stack frame"),
        ("Exception\n\tat com.acme.Shop.pay(Shop.java:42)", "stack frame"),
        ("TypeError: x\n    at Object.<anonymous> (/srv/index.js:10:5)", "stack frame"),
        ("TypeError: x\n    at /srv/index.js:10:5", "stack frame"),
        ("Error\n    at Module._compile (node:internal/modules/cjs/loader:1105:14)", "stack frame"),
    ],
)
def test_r_tier_2_code_or_diagnostics_scores_3(text, detail):
    # given
    body = _user(text)
    # when
    verdict = classify(body, CONFIG)
    # then
    assert verdict.signals == (Signal("code", 3, f"{detail} in message 1"),)


@pytest.mark.parametrize(
    "text",
    [
        "one ``` marker alone is not a block",
        "Don't panic: it is only a test.",
        "Panic: the upper-case word at a line start is prose",
        "We met at home (mostly) on Sundays.",
        "    at the station (platform 2) at 10:45",
        "    at 10:45:30",
        "The file is called main.py, line 12 is wrong",
        "def f(x): return x",  # code-like, but no fence or diagnostic
    ],
)
def test_r_tier_2_prose_near_misses_are_not_code(text):
    # given
    body = _user(text)
    # when
    verdict = classify(body, CONFIG)
    # then
    assert verdict.signals == ()


def test_r_tier_2_code_counts_anywhere_in_the_messages_once():
    # given a traceback in a tool result and a fence in the system prompt
    body = {
        "messages": [
            {"role": "system", "content": "Answer with code:\n```\n# like this\n```"},
            {"role": "user", "content": "Run the tests."},
            {"role": "tool", "tool_call_id": "c1", "content": "Traceback (most recent call last)"},
            {"role": "user", "content": "What now?"},
        ]
    }
    # when
    verdict = classify(body, CONFIG)
    # then
    assert verdict.signals == (Signal("code", 3, "fenced code block in message 1"),)


# R-TIER-2: tools, structured output, attachments, context, depth.


@pytest.mark.parametrize(
    ("count", "points", "detail"),
    [(1, 2, "1 tool declared"), (4, 2, "4 tools declared"), (7, 4, "7 tools declared")],
)
def test_r_tier_2_tools_score_2_and_2_more_at_five(count, points, detail):
    # given
    body = {**_user("hi"), "tools": _tools(count)}
    # when
    verdict = classify(body, CONFIG)
    # then
    assert verdict.signals == (Signal("tools", points, detail),)
    assert verdict.score == points


def test_r_tier_2_empty_tools_list_is_no_signal():
    assert classify({**_user("hi"), "tools": []}, CONFIG).signals == ()


def test_r_tier_2_json_schema_response_format_scores_2():
    # given
    schema = {"name": "invoice", "schema": {"type": "object"}}
    body = {**_user("hi"), "response_format": {"type": "json_schema", "json_schema": schema}}
    # when
    verdict = classify(body, CONFIG)
    # then
    assert verdict.signals == (
        Signal("structured_output", 2, "response_format json_schema 'invoice'"),
    )


def test_r_tier_2_json_object_mode_is_not_structured_output():
    body = {**_user("hi"), "response_format": {"type": "json_object"}}
    assert classify(body, CONFIG).signals == ()


def test_r_tier_2_attachments_score_2_once_with_their_kinds():
    # given two images, a file and an audio clip over two messages
    image = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    body = {
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "see"}, image, image]},
            {"role": "assistant", "content": "ok"},
            {
                "role": "user",
                "content": [
                    {"type": "file", "file": {"file_id": "file-1"}},
                    {"type": "input_audio", "input_audio": {"data": "", "format": "wav"}},
                ],
            },
        ]
    }
    # when
    verdict = classify(body, CONFIG)
    # then
    assert verdict.signals == (Signal("attachments", 2, "2 images, 1 file, 1 audio"),)


@pytest.mark.parametrize(
    ("chars", "points"),
    [(1_999, 0), (2_000, 1), (7_999, 1), (8_000, 3), (31_999, 3), (32_000, 6), (90_000, 6)],
)
def test_r_tier_2_context_steps_at_2k_8k_32k(chars, points):
    # given
    body = _user(_filler(chars))
    # when
    verdict = classify(body, CONFIG)
    # then
    assert verdict.score == points
    if points:
        assert verdict.signals == (Signal("context", points, f"{chars:,} characters"),)


def test_d_9_context_counts_the_text_of_every_role():
    # given 500 characters each from system, user, assistant and a tool result (text parts too)
    body = {
        "messages": [
            {"role": "system", "content": _filler(500)},
            {"role": "user", "content": [{"type": "text", "text": _filler(500)}]},
            {"role": "assistant", "content": _filler(500), "tool_calls": []},
            {"role": "tool", "tool_call_id": "c1", "content": _filler(500)},
        ]
    }
    # when
    verdict = classify(body, CONFIG)
    # then
    assert verdict.signals == (Signal("context", 1, "2,000 characters"),)


def test_d_9_context_counts_a_responses_api_input():
    # given
    body = {"instructions": _filler(1_000), "input": _filler(1_000)}
    # when
    verdict = classify(body, CONFIG)
    # then
    assert verdict.signals == (Signal("context", 1, "2,000 characters"),)


@pytest.mark.parametrize(("count", "signals"), [(6, ()), (7, (Signal("depth", 1, "7 messages"),))])
def test_r_tier_2_thread_depth_of_7_messages_scores_1(count, signals):
    # given
    roles = ["user", "assistant"]
    body = {"messages": [{"role": roles[i % 2], "content": "ok"} for i in range(count)]}
    # when
    verdict = classify(body, CONFIG)
    # then
    assert verdict.signals == signals


def test_r_tier_2_signals_add_up_in_table_order():
    # given every signal but context, in a thread of 7 messages
    schema = {"type": "json_schema", "json_schema": {"name": "plan"}}
    image = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    history = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}] * 3
    latest = [{"type": "text", "text": SNIPPET + "Step by step?"}, image]
    body = {
        "messages": [*history, {"role": "user", "content": latest}],
        "tools": _tools(2),
        "response_format": schema,
    }
    # when
    verdict = classify(body, CONFIG)
    # then
    assert [(s.name, s.points) for s in verdict.signals] == [
        ("effort_keyword", 4), ("code", 3), ("tools", 2), ("structured_output", 2),
        ("attachments", 2), ("depth", 1),
    ]  # fmt: skip
    assert verdict.score == 14


def test_r_tier_2_threshold_is_configurable():
    # given a lower threshold
    config = _config(threshold=3)
    # when
    verdict = classify(_user(SNIPPET), config)
    # then the short snippet escalates
    assert (verdict.tier, verdict.score) == ("hard", 3)


def test_r_tier_2_empty_request_is_easy_with_no_signals():
    assert classify({}, CONFIG) == Verdict("easy", 0, (), "classifier")


# R-TIER-1, D-8: configuration as stored.


@pytest.mark.parametrize(
    "raw",
    [None, {}, {"threshold": 3}, {"aliases": {}}, {"aliases": {"normal": {"easy": "e"}}}],
)
def test_r_tier_1_without_aliases_the_feature_is_idle(raw):
    assert tier_config(raw) is None


def test_r_tier_1_defaults_fill_absent_keys():
    # given
    raw = {"aliases": {"normal": {"easy": "normal-easy", "hard": "normal-hard"}}}
    # when
    config = tier_config(raw)
    # then
    assert config == TierConfig(
        aliases={"normal": NORMAL},
        threshold=DEFAULT_THRESHOLD,
        session_ttl_s=DEFAULT_SESSION_TTL_S,
        effort_keywords=DEFAULT_EFFORT_KEYWORDS,
    )
    assert (DEFAULT_THRESHOLD, DEFAULT_SESSION_TTL_S) == (4, 1800)


def test_r_tier_1_stored_values_are_read():
    # given
    raw = {
        "threshold": 6,
        "session_ttl_s": 600,
        "effort_keywords": ["ultrathink", "", "  "],
        "aliases": {
            "normal": {"easy": "normal-easy", "hard": "normal-hard", "default": "hard"},
            "broken": {"easy": "x", "hard": 3},
        },
    }
    # when
    config = tier_config(raw)
    # then blank keywords and the malformed alias are dropped
    assert config == TierConfig(
        aliases={"normal": TierAlias("normal", "normal-easy", "normal-hard", "hard")},
        threshold=6,
        session_ttl_s=600.0,
        effort_keywords=("ultrathink",),
    )


def test_d_9_an_empty_keyword_list_turns_the_keyword_signal_off():
    config = _config(effort_keywords=[])
    assert config.effort_keywords == ()
    assert classify(_user("Find the root cause."), config).signals == ()


@pytest.mark.parametrize(("threshold", "ttl"), [(0, 0), (True, False), ("4", "1800"), (2.5, -1)])
def test_r_tier_1_invalid_stored_numbers_take_the_defaults(threshold, ttl):
    config = _config(threshold=threshold, session_ttl_s=ttl)
    assert (config.threshold, config.session_ttl_s) == (4, 1800)


# R-TIER-4, D-8: override headers.


def test_r_tier_4_smart_routing_off_takes_the_alias_default_without_classifying():
    # given a hard-looking request and an alias whose default is hard
    alias = TierAlias("normal", "normal-easy", "normal-hard", default="hard")
    pins = InProcessTierPins()
    body = _user("What is the root cause?")
    # when
    verdict, target = choose_tier(
        alias, body, {"X-Switchyard-Smart-Routing": "off"}, CONFIG, pins, SESSION, NOW
    )
    # then
    assert (verdict, target) == (Verdict("hard", 0, (), "off"), "normal-hard")
    assert len(pins) == 0


def test_d_8_smart_routing_off_defaults_to_easy():
    verdict, target = choose_tier(
        NORMAL, _user("Think hard."), {"x-switchyard-smart-routing": "OFF"}, CONFIG,
        InProcessTierPins(), SESSION, NOW,
    )  # fmt: skip
    assert (verdict.tier, verdict.source, target) == ("easy", "off", "normal-easy")


@pytest.mark.parametrize(
    ("value", "tier", "target"),
    [
        ("easy", "easy", "normal-easy"),
        ("hard", "hard", "normal-hard"),
        (" Hard ", "hard", "normal-hard"),
    ],
)
def test_r_tier_4_tier_header_forces_the_tier_and_reports_the_classifier(value, tier, target):
    # given a request the classifier scores 4 (hard)
    body = _user("What is the root cause?")
    # when
    verdict, chosen = choose_tier(
        NORMAL, body, {"X-Switchyard-Tier": value}, CONFIG, InProcessTierPins(), SESSION, NOW
    )
    # then
    assert verdict == Verdict(
        tier, 4, (Signal("effort_keyword", 4, "effort keyword 'root cause'"),), "forced"
    )
    assert chosen == target


def test_r_tier_4_a_forced_tier_wins_over_smart_routing_off_without_classifying():
    # given
    headers = {"X-Switchyard-Tier": "hard", "X-Switchyard-Smart-Routing": "off"}
    # when
    verdict, target = choose_tier(
        NORMAL, _user(SNIPPET), headers, CONFIG, InProcessTierPins(), SESSION, NOW
    )
    # then
    assert (verdict, target) == (Verdict("hard", 0, (), "forced"), "normal-hard")


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({"X-Switchyard-Tier": "medium"}, "X-Switchyard-Tier must be easy or hard"),
        ({"X-Switchyard-Tier": ""}, "X-Switchyard-Tier must be easy or hard"),
        (
            {"X-Switchyard-Smart-Routing": "false"},
            "X-Switchyard-Smart-Routing must be on or off",
        ),
    ],
)
def test_r_tier_4_other_header_values_are_rejected(headers, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        choose_tier(NORMAL, _user("hi"), headers, CONFIG, InProcessTierPins(), SESSION, NOW)


def test_r_tier_4_smart_routing_on_classifies_as_usual():
    verdict, target = choose_tier(
        NORMAL, _user(SNIPPET), {"X-Switchyard-Smart-Routing": "on"}, CONFIG,
        InProcessTierPins(), SESSION, NOW,
    )  # fmt: skip
    assert (verdict.tier, verdict.score, verdict.source, target) == (
        "easy", 3, "classifier", "normal-easy",
    )  # fmt: skip


# R-TIER-3: the pin as choose_tier uses it (the conversation scenarios: test_tier_pins.py).


def test_r_tier_3_a_hard_verdict_pins_the_alias_and_session():
    # given
    pins = InProcessTierPins()
    # when
    verdict, target = choose_tier(NORMAL, _user("Think hard."), {}, CONFIG, pins, SESSION, NOW)
    # then
    assert (verdict.source, target) == ("classifier", "normal-hard")
    assert pins.get(pin_key("normal", SESSION), NOW + DEFAULT_SESSION_TTL_S - 1) == "hard"
    assert pins.get(pin_key("other", SESSION), NOW) is None


def test_r_tier_3_without_a_session_key_nothing_is_pinned():
    # given
    pins = InProcessTierPins()
    # when
    first, _ = choose_tier(NORMAL, _user("Think hard."), {}, CONFIG, pins, None, NOW)
    second, target = choose_tier(NORMAL, _user("thanks!"), {}, CONFIG, pins, None, NOW + 1)
    # then
    assert (first.tier, second.tier, target, len(pins)) == ("hard", "easy", "normal-easy", 0)


def test_r_tier_3_an_easy_verdict_under_a_hard_pin_is_reported_as_pinned():
    # given
    pins = InProcessTierPins()
    pins.pin_hard(pin_key("normal", SESSION), NOW, 1800)
    # when
    verdict, target = choose_tier(NORMAL, _user(SNIPPET), {}, CONFIG, pins, SESSION, NOW + 60)
    # then the classifier's score and signals are kept
    assert verdict == Verdict(
        "hard", 3, (Signal("code", 3, "fenced code block in message 1"),), "pinned"
    )
    assert target == "normal-hard"


# R-TIER-4: the verdict in response headers.


def test_r_tier_4_verdict_headers_carry_tier_score_source_and_reasons():
    verdict = Verdict(
        "hard",
        4,
        (Signal("code", 3, "fenced code block in message 1"), Signal("context", 1, "2,000 c")),
        "classifier",
    )
    assert verdict_headers(verdict) == {
        "X-Switchyard-Tier": "hard",
        "X-Switchyard-Tier-Score": "4",
        "X-Switchyard-Tier-Source": "classifier",
        "X-Switchyard-Tier-Reasons": "code+3, context+1",
    }
    assert verdict_headers(Verdict("easy", 0, (), "off"))["X-Switchyard-Tier-Reasons"] == "none"
