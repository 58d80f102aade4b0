"""Pure parts of the fake, without a server: fault and flag parsing, profiles, reply text."""

from __future__ import annotations

import pytest

from fakeupstream.cli import add_arguments, config_from_options
from fakeupstream.faults import Fault, FaultKind, parse_fault, parse_fault_script
from fakeupstream.process import flag_args
from fakeupstream.profiles import CacheMode, parse_error_rate
from fakeupstream.replies import chosen_tool_name, estimate_prompt_tokens, reply_tokens


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("status:503", Fault(FaultKind.STATUS, 503)),
        ("hang", Fault(FaultKind.HANG)),
        ("disconnect", Fault(FaultKind.DISCONNECT)),
        ("drop_mid_stream:0", Fault(FaultKind.DROP_MID_STREAM, 0)),
        ("malformed", Fault(FaultKind.MALFORMED)),
        ("latency:250", Fault(FaultKind.LATENCY, 250)),
        ("error_event", Fault(FaultKind.ERROR_EVENT)),
        ("error_event:400", Fault(FaultKind.ERROR_EVENT, 400)),
        ("status:302", Fault(FaultKind.STATUS, 302)),
    ],
)
def test_fault_kinds_parse(text, expected):
    assert parse_fault(text) == expected


@pytest.mark.parametrize(
    "text",
    ["status", "status:200", "status:abc", "hang:3", "boom", "latency:-1", "error_event:200"],
)
def test_bad_faults_are_refused(text):
    with pytest.raises(ValueError):
        parse_fault(text)


def test_fault_script_consumes_entries_in_order():
    # given
    script = parse_fault_script({"faults": [{"fault": "hang", "times": 2}, {"fault": "malformed"}]})
    # when
    taken = [script.take() for _ in range(4)]
    # then
    hang, malformed = Fault(FaultKind.HANG), Fault(FaultKind.MALFORMED)
    assert taken == [hang, hang, malformed, None]


def test_error_rate_parses_and_validates():
    assert parse_error_rate("503=0.1, 429=0.05") == {503: 0.1, 429: 0.05}
    assert parse_error_rate("") == {}
    for bad in ("503", "200=0.1", "503=1.5", "503=0.6,429=0.6"):
        with pytest.raises(ValueError):
            parse_error_rate(bad)


def test_flags_override_the_profile_and_name_defaults_to_it():
    # given
    import argparse

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    # when
    options = vars(parser.parse_args(["--port", "9", "--profile", "slow", "--ttft-ms", "5"]))
    config = config_from_options(options)
    # then
    assert (config.port, config.host, config.profile) == (9, "127.0.0.1", "slow")
    assert config.settings.ttft_ms == 5.0
    assert config.settings.latency_ms == 300.0
    assert config.settings.tokens_per_s == 50.0
    assert config.settings.name == "slow"


def test_flag_args_turn_keywords_into_cli_flags():
    flags = {"latency_ms": 50, "error_rate": {503: 0.1}, "models": ["a", "b"], "seed": None}
    cached = {"cached_tokens": CacheMode.ALWAYS.value}
    assert flag_args(flags) == ["--latency-ms", "50", "--error-rate", "503=0.1", "--models", "a,b"]
    assert flag_args(cached) == ["--cached-tokens", "always"]


def test_reply_tokens_repeat_the_sentence_to_the_requested_length():
    tokens = reply_tokens("p", 9)
    assert "".join(tokens) == "This is a fake reply from p. This is"
    assert len(tokens) == 9


def test_prompt_tokens_count_text_parts_and_system():
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "x" * 10}, {"type": "image_url"}]}
    ]
    assert estimate_prompt_tokens(messages, system="y" * 6) == 4
    assert estimate_prompt_tokens([{"role": "user", "content": ""}]) == 1


def test_tool_choice_none_never_calls_a_tool():
    body = {"tools": [{"name": "t"}], "tool_choice": "none",
            "messages": [{"role": "user", "content": "weather"}]}  # fmt: skip
    assert chosen_tool_name(body) is None


def test_management_command_shares_the_options():
    # given
    command_module = pytest.importorskip("gateway.management.commands.fakeupstream")
    # when
    parser = command_module.Command().create_parser("manage.py", "fakeupstream")
    options = vars(parser.parse_args(["--port", "7", "--error-rate", "503=0.5"]))
    # then
    assert config_from_options(options).settings.error_rate == {503: 0.5}
