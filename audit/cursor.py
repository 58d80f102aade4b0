"""Keyset pagination for the newest-first lists (traces, admin events): a page is the rows
strictly older than the cursor's `(created_at, id)`, read through the `(…, -created_at,
-id)` index, so page 1,000 costs what page 1 costs and no `COUNT(*)` is ever run.

The cursor is opaque to clients: URL-safe base64 of `<created_at isoformat>|<id>`. A
cursor that does not decode is the caller's mistake (`ValueError`, a 400 in the view)."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet

DEFAULT_LIMIT = 50
MAX_LIMIT = 200


@dataclass(frozen=True, slots=True)
class Cursor:
    created_at: datetime
    id: str

    def encode(self) -> str:
        raw = f"{self.created_at.isoformat()}|{self.id}".encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str) -> Cursor:
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
            stamp, _, row_id = raw.partition("|")
            created_at = datetime.fromisoformat(stamp)
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise ValueError("`cursor` is not a cursor this API returned.") from None
        if not row_id or created_at.tzinfo is None:
            raise ValueError("`cursor` is not a cursor this API returned.")
        return cls(created_at, row_id)


def parse_limit(text: str | None) -> int:
    """`limit` from a query string: 1…MAX_LIMIT, DEFAULT_LIMIT when absent."""
    if text is None or text == "":
        return DEFAULT_LIMIT
    if not text.isdigit() or not 1 <= int(text) <= MAX_LIMIT:
        raise ValueError(f"`limit` must be a whole number from 1 to {MAX_LIMIT}.")
    return int(text)


def page(
    queryset: QuerySet[Any], cursor: Cursor | None, limit: int
) -> tuple[list[Any], str | None]:
    """The next `limit` rows newest first, and the cursor of the page after them (None on
    the last page). One query: it reads `limit + 1` rows to know whether more follow."""
    if cursor is not None:
        queryset = queryset.filter(
            Q(created_at__lt=cursor.created_at) | Q(created_at=cursor.created_at, id__lt=cursor.id)
        )
    rows = list(queryset.order_by("-created_at", "-id")[: limit + 1])
    if len(rows) <= limit:
        return rows, None
    last = rows[limit - 1]
    return rows[:limit], Cursor(last.created_at, str(last.id)).encode()
