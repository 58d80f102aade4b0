"""The auto router's workload classification (SPEC R-AUTO-2): the local classifier's mix,
complexity and confidence, and the strict reading of the LLM classifier's reply."""

from __future__ import annotations

import orjson
import pytest

from fakeupstream.structured import instance_json
from routing.engine.auto.classify import (
    CLASSIFIER_SCHEMA,
    WORKLOADS,
    classifier_body,
    classify_locally,
    parse_classifier_reply,
)


def _chat(text: str, **extra):
    return {"model": "auto", "messages": [{"role": "user", "content": text}], **extra}


def test_r_auto_2_local_a_greeting_is_general_simple_and_unsure():
    verdict = classify_locally(_chat("hello, how are you?"))
    assert (verdict.task, verdict.mix, verdict.complexity) == ("general", (("general", 1.0),), 0.0)
    assert verdict.confidence == 0.4
    assert verdict.source == "local"


def test_r_auto_2_local_declared_tools_are_a_fact():
    tools = [
        {"type": "function", "function": {"name": f"t{i}", "parameters": {}}} for i in range(5)
    ]
    verdict = classify_locally(_chat("book me a table", tools=tools))
    assert verdict.task == "tool_use"
    assert verdict.confidence == 0.9
    assert verdict.complexity == pytest.approx(0.4)  # tools 2 + ≥ 5 tools 2 points of 10
    assert verdict.signals == ("tools",)


def test_r_auto_2_local_competing_workloads_share_the_mix_and_lower_confidence():
    verdict = classify_locally(_chat("Translate this Python function's docstring to German"))
    assert verdict.task == "code"
    assert dict(verdict.mix) == {"code": 0.5, "translation": 0.5}
    assert verdict.confidence == 0.55


def test_r_auto_2_local_complexity_grows_with_effort_code_and_size():
    easy = classify_locally(_chat("What is the capital of France?"))
    hard = classify_locally(
        _chat("Think hard about the root cause:\n```py\nraise KeyError\n```\n" + "x" * 8_000)
    )
    reasoning = classify_locally(_chat("hi", reasoning_effort="high"))
    assert easy.complexity < hard.complexity
    assert hard.complexity == pytest.approx(1.0)  # keyword 4 + code 3 + 8k context 3
    assert reasoning.complexity == 0.7


def _reply(**overrides):
    document = {"workloads": dict.fromkeys(WORKLOADS, 0.0), "complexity": 0.8, "confidence": 0.9}
    document["workloads"]["reasoning"] = 0.6
    document["workloads"]["code"] = 0.2
    document.update(overrides)
    return orjson.dumps(document).decode()


def test_r_auto_2_a_valid_classifier_reply_gives_mix_complexity_and_confidence():
    local = classify_locally(_chat("prove it"))
    verdict = parse_classifier_reply(_reply(), local)
    assert verdict is not None
    assert (verdict.task, verdict.source) == ("reasoning", "llm")
    assert dict(verdict.mix) == {"code": 0.25, "reasoning": 0.75}
    assert (verdict.complexity, verdict.confidence) == (0.8, 0.9)


@pytest.mark.parametrize(
    "content",
    [
        "This is a fake reply from cheap.",  # prose
        '{"workloads": {"code": 1}, "complexity": 0.5, "confidence": 0.5}',  # workloads missing
        _reply(complexity=1.5),  # out of range
        _reply(confidence="high"),  # wrong type
        _reply(model="openai/gpt-5"),  # a model is never the classifier's call
        _reply(workloads=dict.fromkeys(WORKLOADS, 0.0)),  # no workload at all
        None,
    ],
)
def test_r_auto_2_anything_but_the_schema_is_rejected(content):
    assert parse_classifier_reply(content, classify_locally(_chat("hi"))) is None


def test_r_auto_2_the_child_request_asks_for_the_schema_and_states_the_facts():
    tools = [{"type": "function", "function": {"name": "t", "parameters": {}}}]
    body = classifier_body(_chat("weather in Paris?", tools=tools), "acme/tiny")
    assert body["model"] == "acme/tiny"
    assert body["response_format"]["json_schema"]["schema"] == CLASSIFIER_SCHEMA
    assert '"tools_declared":1' in body["messages"][1]["content"]
    assert "weather in Paris?" in body["messages"][1]["content"]
    # a structured-output model (the fake upstream) answering it produces a valid verdict
    answer = instance_json(CLASSIFIER_SCHEMA)
    assert parse_classifier_reply(answer, classify_locally(_chat("hi"))) is not None


def test_r_auto_2_long_conversations_are_cut_to_an_excerpt():
    body = classifier_body(_chat("a" * 50_000), "acme/tiny")
    assert len(body["messages"][1]["content"]) < 6_500
