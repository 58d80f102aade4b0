"""The rolling-restart harness's reading of a stream (deploy/rollout_load.py): a stream
counts as complete only with a finish reason and `[DONE]` last, so one cut short by a
restart cannot pass for whole."""

from __future__ import annotations

import pytest

from deploy.rollout_load import stream_complete

CHUNK = b'data: {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": null}]}\n\n'
FINISH = b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n'
USAGE = b'data: {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}\n\n'
DONE = b"data: [DONE]\n\n"


@pytest.mark.parametrize(
    ("raw", "complete"),
    [
        (CHUNK + FINISH + USAGE + DONE, True),
        (CHUNK + FINISH + DONE, True),
        (CHUNK + FINISH + USAGE, False),  # the connection closed before [DONE]
        (CHUNK + DONE, False),  # no finish reason
        (CHUNK, False),
        (b"", False),
    ],
)
def test_a_stream_is_complete_only_with_a_finish_reason_and_done_last(raw, complete):
    assert stream_complete(raw) is complete
