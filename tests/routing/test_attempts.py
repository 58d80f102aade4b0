"""The status after all attempts (SPEC D-18) and in-band errors (an error object inside a
200) classified as the status they name: pure, no server."""

from __future__ import annotations

import pytest

from routing.engine.attempts import (
    AttemptFailed,
    FinalError,
    final_error,
    is_retryable_status,
    retry_after_seconds,
    status_of_in_band_error,
)


def http(status: int, retry_after: float | None = None) -> AttemptFailed:
    return AttemptFailed("http_error", f"HTTP {status}", http_status=status,
                         retryable=is_retryable_status(status, None),
                         retry_after=retry_after)  # fmt: skip


@pytest.mark.parametrize(
    ("_case", "failures", "expected"),
    [
        ("400 passed through", [http(400)], FinalError(400, "upstream_rejected_request")),
        ("404 passed through", [http(404)], FinalError(404, "upstream_rejected_request")),
        ("413 passed through", [http(413)], FinalError(413, "upstream_rejected_request")),
        ("422 is not a 400", [http(422)], FinalError(422, "upstream_rejected_request")),
        ("a redirect", [AttemptFailed("redirect", "r", http_status=302)],
         FinalError(502, "upstream_error")),
        ("a malformed body", [AttemptFailed("malformed", "m")], FinalError(502, "upstream_error")),
        ("broken before content", [AttemptFailed("stream_error", "s")],
         FinalError(502, "upstream_error")),
        ("every endpoint busy, hinted", [http(429, 7.2), http(503, 3.0)],
         FinalError(503, "upstream_unavailable", 3)),
        ("every endpoint busy, no hint", [http(529), http(503)],
         FinalError(503, "upstream_unavailable", 1)),
        ("refused connections", [AttemptFailed("connect_error", "c")],
         FinalError(503, "upstream_unavailable", 1)),
        ("a timeout last", [http(503), AttemptFailed("timeout", "t")],
         FinalError(504, "upstream_timeout")),
        ("a 500 among them", [http(429), http(500)], FinalError(502, "upstream_error")),
        ("our key refused everywhere", [http(401), http(403)], FinalError(502, "upstream_error")),
        ("nobody can express it", [AttemptFailed("unsupported_request", "n > 1")],
         FinalError(400, "unsupported_request")),
    ],
)  # fmt: skip
def test_d_18_status_after_all_attempts(_case, failures, expected):
    assert final_error(failures) == expected


@pytest.mark.parametrize("status", [400, 404, 413, 422])
def test_d_18_a_request_fault_is_not_failed_over(status):
    assert not is_retryable_status(status, None)


@pytest.mark.parametrize(
    ("error_type", "code", "expected"),
    [
        ("invalid_request_error", None, 400),
        ("invalid_request_error", "context_length_exceeded", 400),
        ("overloaded_error", None, 529),
        ("rate_limit_error", None, 429),
        ("server_error", 502, 502),
        ("whatever", "503", 503),
        ("whatever", None, 500),
    ],
)
def test_d_18_an_in_band_error_counts_as_the_status_it_names(error_type, code, expected):
    assert status_of_in_band_error(error_type, code) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [("2", 2.0), ("0.5", 0.5), ("sk-secret-key", None), ("-1", None), ("nan", None),
     ("inf", None), ("1e9", 300), ("", None), (None, None)],
)  # fmt: skip
def test_retry_after_is_only_ever_a_sane_number(value, expected):
    assert retry_after_seconds(value) == expected
