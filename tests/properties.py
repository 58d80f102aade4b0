"""Example counts of the slow property tests: the full count under `make test-deep`
(SWITCHYARD_TEST_DEEP=1), a quarter of it in `make test` and CI, where the same tests run
on every change. SWITCHYARD_FUZZ_EXAMPLES, when set, is the count for the fuzzers."""

from __future__ import annotations

import os

DEEP = os.environ.get("SWITCHYARD_TEST_DEEP", "") == "1"


def examples(full: int) -> int:
    """The number of examples a property test of `full` examples runs in this run."""
    return full if DEEP else max(10, full // 4)


def fuzz_examples(full: int) -> int:
    """`examples`, unless SWITCHYARD_FUZZ_EXAMPLES says how many."""
    given = os.environ.get("SWITCHYARD_FUZZ_EXAMPLES", "").strip()
    return int(given) if given else examples(full)
