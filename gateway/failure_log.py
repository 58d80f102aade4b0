"""Telling a periodic job's failures without flooding the log: the first failure in full,
with its traceback; then, while it keeps failing, one line a minute saying for how long;
and one line when it works again. A database or Redis away for ten minutes wrote about
twenty thousand lines of tracebacks from jobs that retry every few seconds (the budget
sweeper, the live-metric sharing, the snapshot check); this writes a dozen."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

EVERY_S = 60.0  # while failing, a line this often


class RepeatedFailure:
    """One job's failures, for `log`; `what` names the job ("sweeping budget reservations").
    Not thread-safe: each job runs in one task at a time."""

    def __init__(
        self,
        log: logging.Logger,
        what: str,
        *,
        every_s: float = EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.log, self.what, self.every_s, self.clock = log, what, every_s, clock
        self._since: float | None = None  # failing since (clock time)
        self._told_at = 0.0

    @property
    def failing(self) -> bool:
        return self._since is not None

    def failed(self, error: BaseException, *, level: int = logging.ERROR) -> None:
        """Call from the `except` block that caught `error`."""
        now = self.clock()
        if self._since is None:
            self._since = self._told_at = now
            self.log.log(level, "%s failed; retrying", self.what, exc_info=error)
        elif now - self._told_at >= self.every_s:
            self._told_at = now
            self.log.log(
                level,
                "%s failing for %.0f s: %s",
                self.what,
                now - self._since,
                type(error).__name__,
            )

    def worked(self) -> None:
        """Call after a run that succeeded."""
        if self._since is not None:
            self.log.warning("%s works again after %.0f s", self.what, self.clock() - self._since)
            self._since = None
