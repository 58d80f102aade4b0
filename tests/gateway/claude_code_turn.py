"""Claude Code's next turn of a tool loop with extended thinking, as the Anthropic SDK sends
it (Anthropic's docs: "extended thinking with tool use", "prompt caching"): the assistant
turn starts with its signed thinking block, which Anthropic wants back, and cache_control
marks the system, a block and a tool. What a gateway that translates through chat loses;
the native tests (test_anthropic_native.py, test_messages_native_api.py) send it."""

from __future__ import annotations

from typing import Any

EPHEMERAL = {"type": "ephemeral"}
READ_TOOL = {"name": "Read", "description": "Read a file",
             "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
             "cache_control": EPHEMERAL}  # fmt: skip
CLAUDE_CODE_TURN: dict[str, Any] = {
    "max_tokens": 8192,
    "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": EPHEMERAL}],
    "tools": [READ_TOOL],
    "thinking": {"type": "enabled", "budget_tokens": 4096},
    "metadata": {"user_id": "user_abc_account_def_session_0123"},
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Read a.py",
                                      "cache_control": EPHEMERAL}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "I should read it.", "signature": "EqQBCkYI"},
            {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "a.py"}},
        ]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": "print(1)"}]},
    ],
}  # fmt: skip
