"""Step 5 of the request path: admission — budgets and rate limits (SPEC R-POL-2, R-LIM-1,
R-LIM-2). Not enforced yet: this is the seam the budgets issue fills. `admit` will reserve
the worst-case cost in every scope in one atomic step before the first attempt (or refuse
with 402/429), and the record step will `settle` the reservation on every exit path. Today
every request is admitted and settling does nothing; the request path already calls both
where they belong, so enforcing them changes no other step."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.request_path.caller import Caller
from gateway.request_path.resolve import Resolved


@dataclass(frozen=True, slots=True)
class Admission:
    """What was reserved for a request (nothing yet)."""

    reserved_micros: int = 0

    def settle(self, cost_micros: int) -> None:
        """Replace the reservation with the actual cost (nothing to replace yet)."""
        return


ADMITTED = Admission()


def admit(caller: Caller, resolved: Resolved) -> Admission:
    return ADMITTED
