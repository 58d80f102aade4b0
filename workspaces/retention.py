"""The trace-retention format of a workspace policy: `30d`, `12h`, `0d` (keep nothing past
the purge run). This module owns the format and its default; `manage.py apply` validates
against `RETENTION`, the `Policy.retention` column defaults to `DEFAULT_RETENTION`, and the
purge (audit/retention.py) reads a stored value with `parse_retention`. Pure: no Django.
"""

from __future__ import annotations

import re
from datetime import timedelta

DEFAULT_RETENTION = "30d"
# At most six digits, the limit apply has always enforced; the purge reads stored values
# with the same pattern, so a value apply would reject is never purged by.
RETENTION = re.compile(r"(\d{1,6})([dh])")
RETENTION_HINT = "a duration like 30d or 12h"  # completes "'1w' is not ..." at apply


def parse_retention(value: str) -> timedelta | None:
    """`30d` -> 30 days, `12h` -> 12 hours; None when the value is not understood (the
    purge then keeps those traces). Surrounding whitespace is ignored: the column is also
    written from the admin, which apply never checked."""
    match = RETENTION.fullmatch(value.strip())
    if not match:
        return None
    amount, unit = int(match.group(1)), match.group(2)
    return timedelta(days=amount) if unit == "d" else timedelta(hours=amount)
