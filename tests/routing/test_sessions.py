"""Session detection (SPEC R-EXE-7): client ids in order, else a conversation hash; every
key scoped to its workspace and API key."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from routing.engine.affinity.sessions import SOURCES, conversation_hash, detect_session

SYSTEM = {"role": "system", "content": "You are the ACME support assistant."}
FIRST = {"role": "user", "content": "My invoice is wrong."}
TOOLS = [{"type": "function", "function": {"name": "lookup_invoice", "parameters": {}}}]


def _detect(
    headers: dict[str, str] | None = None,
    body: dict[str, Any] | None = None,
    *,
    workspace_id: int = 7,
    api_key_id: int = 11,
    model: str = "normal",
) -> tuple[str, str]:
    return detect_session(
        headers or {}, body or {}, workspace_id=workspace_id, api_key_id=api_key_id, model=model
    )


ALL_IDS_HEADERS = {"X-Session-Id": "h1", "Session-Id": "h2"}
ALL_IDS_BODY = {
    "session_id": "b1",
    "prompt_cache_key": "b2",
    "metadata": {"session_id": "b3", "user_id": "b4"},
    "messages": [FIRST],
}


@pytest.mark.parametrize(
    ("drop_headers", "drop_body", "expected"),
    [
        ((), (), ("7:11:header:h1", "header")),
        (("X-Session-Id",), (), ("7:11:header:h2", "header")),
        (("X-Session-Id", "Session-Id"), (), ("7:11:session_id:b1", "session_id")),
        (
            ("X-Session-Id", "Session-Id"),
            ("session_id",),
            ("7:11:prompt_cache_key:b2", "prompt_cache_key"),
        ),
        (
            ("X-Session-Id", "Session-Id"),
            ("session_id", "prompt_cache_key"),
            ("7:11:metadata.session_id:b3", "metadata.session_id"),
        ),
        (
            ("X-Session-Id", "Session-Id"),
            ("session_id", "prompt_cache_key", "metadata.session_id"),
            ("7:11:metadata.user_id:b4", "metadata.user_id"),
        ),
    ],
)
def test_r_exe_7_session_ids_are_taken_in_order(drop_headers, drop_body, expected):
    # given every id, minus those dropped
    headers = {k: v for k, v in ALL_IDS_HEADERS.items() if k not in drop_headers}
    metadata = {
        k: v for k, v in ALL_IDS_BODY["metadata"].items() if f"metadata.{k}" not in drop_body
    }
    body = {k: v for k, v in ALL_IDS_BODY.items() if k not in drop_body}
    body["metadata"] = metadata
    # when
    detected = _detect(headers, body)
    # then
    assert detected == expected


def test_r_exe_7_without_an_id_the_conversation_is_hashed():
    # given
    body = {"messages": [SYSTEM, FIRST], "tools": TOOLS}
    # when
    key, source = _detect(body=body)
    # then
    expected = hashlib.sha256(
        json.dumps(
            {
                "api_key_id": 11,
                "model": "normal",
                "tools": TOOLS,
                "opening": [["system", SYSTEM["content"]], ["user", FIRST["content"]]],
            },
            sort_keys=True,
            separators=(",", ":"),
        ).encode()
    ).hexdigest()
    assert (key, source) == (f"7:11:hash:{expected}", "hash")


def test_r_exe_7_sources_are_the_six_names():
    assert SOURCES == (
        "header", "session_id", "prompt_cache_key", "metadata.session_id", "metadata.user_id",
        "hash",
    )  # fmt: skip


def test_r_exe_7_header_names_are_case_insensitive():
    assert _detect({"x-session-id": "abc"}) == ("7:11:header:abc", "header")
    assert _detect({"SESSION-ID": "abc"}) == ("7:11:header:abc", "header")


@pytest.mark.parametrize(
    ("other", "same"),
    [
        ({"workspace_id": 8}, False),
        ({"api_key_id": 12}, False),
        ({"model": "other"}, True),  # a client id does not depend on the model
    ],
)
def test_r_exe_7_client_ids_are_scoped_to_workspace_and_key(other, same):
    # given the same id from two callers
    headers = {"X-Session-Id": "shared-id"}
    # when
    first, _ = _detect(headers)
    second, _ = _detect(headers, **other)
    # then
    assert (first == second) is same


@pytest.mark.parametrize("other", [{"workspace_id": 8}, {"api_key_id": 12}, {"model": "normal-2"}])
def test_r_exe_7_conversation_hashes_are_scoped_to_workspace_key_and_model(other):
    body = {"messages": [SYSTEM, FIRST]}
    assert _detect(body=body)[0] != _detect(body=body, **other)[0]


def test_r_exe_7_the_hash_is_stable_as_the_conversation_grows():
    # given the first request of a conversation and a later one
    first = {"messages": [SYSTEM, FIRST], "tools": TOOLS}
    later = {
        "messages": [
            SYSTEM,
            FIRST,
            {"role": "assistant", "content": "Which invoice number?"},
            {"role": "user", "content": "INV-2041."},
            {"role": "system", "content": "Reminder: today is Tuesday."},
        ],
        "tools": TOOLS,
    }
    # when / then
    assert _detect(body=first) == _detect(body=later)


@pytest.mark.parametrize(
    "change",
    [
        {"messages": [{"role": "system", "content": "You are a pirate."}, FIRST]},
        {"messages": [SYSTEM, {"role": "user", "content": "My order is late."}]},
        {"messages": [SYSTEM, FIRST], "tools": []},
        {"messages": [FIRST]},
    ],
)
def test_r_exe_7_system_prompt_first_user_turn_and_tools_tell_conversations_apart(change):
    base = {"messages": [SYSTEM, FIRST], "tools": TOOLS}
    assert _detect(body=base)[0] != _detect(body=change)[0]


def test_r_exe_7_tool_key_order_does_not_change_the_hash():
    # given the same tools with keys in another order
    reordered = [{"function": {"parameters": {}, "name": "lookup_invoice"}, "type": "function"}]
    # when / then
    assert _detect(body={"messages": [FIRST], "tools": TOOLS}) == _detect(
        body={"messages": [FIRST], "tools": reordered}
    )


def test_r_exe_7_moving_cache_control_markers_does_not_change_the_hash():
    # given the first turn with a cache breakpoint, and the next turn without it
    marked = {
        "role": "user",
        "content": [
            {"type": "text", "text": "My invoice is wrong.", "cache_control": {"type": "ephemeral"}}
        ],
    }
    plain = {"role": "user", "content": [{"type": "text", "text": "My invoice is wrong."}]}
    # when / then
    assert _detect(body={"messages": [SYSTEM, marked]}) == _detect(
        body={"messages": [SYSTEM, plain, {"role": "assistant", "content": "Sorry!"}]}
    )


def test_r_exe_7_a_responses_api_body_is_hashed_from_instructions_and_input():
    # given
    responses = {"instructions": SYSTEM["content"], "input": FIRST["content"]}
    chat = {"messages": [SYSTEM, FIRST]}
    # when / then: the same conversation either way
    assert _detect(body=responses) == _detect(body=chat)


def test_r_exe_7_hash_equals_conversation_hash():
    body = {"messages": [SYSTEM, FIRST], "tools": TOOLS}
    digest = conversation_hash(body, api_key_id=11, model="normal")
    assert _detect(body=body) == (f"7:11:hash:{digest}", "hash")


PCK = ("7:11:prompt_cache_key:p", "prompt_cache_key")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"session_id": "  s-1  "}, ("7:11:session_id:s-1", "session_id")),
        ({"session_id": "", "prompt_cache_key": "p"}, PCK),
        ({"session_id": "   ", "prompt_cache_key": "p"}, PCK),
        ({"session_id": None, "prompt_cache_key": "p"}, PCK),
        ({"session_id": True, "prompt_cache_key": "p"}, PCK),
        ({"session_id": {"id": 1}, "prompt_cache_key": "p"}, PCK),
        ({"metadata": {"user_id": 42}}, ("7:11:metadata.user_id:42", "metadata.user_id")),
        ({"metadata": "user-1", "session_id": None}, None),
    ],
)
def test_r_exe_7_blank_or_malformed_ids_are_skipped(body, expected):
    # when
    key, source = _detect(body=body)
    # then
    if expected is None:
        assert source == "hash"
    else:
        assert (key, source) == expected


def test_r_exe_7_a_blank_header_falls_through_to_the_next():
    assert _detect({"X-Session-Id": " ", "Session-Id": "s"}) == ("7:11:header:s", "header")


def test_r_exe_7_a_very_long_client_id_is_stored_as_its_hash():
    # given
    long_id = "x" * 129
    # when
    key, source = _detect({"X-Session-Id": long_id})
    # then
    digest = hashlib.sha256(long_id.encode()).hexdigest()
    assert (key, source) == (f"7:11:header:sha256:{digest}", "header")
    assert _detect({"X-Session-Id": "x" * 128})[0] == "7:11:header:" + "x" * 128
