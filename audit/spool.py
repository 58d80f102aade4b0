"""The trace spool: batches of traces the database could not take, kept on local disk until
it can (SPEC R-OBS-1: traces survive a database outage and a restart during it).

One file per batch, JSON lines, written under a temporary name and renamed into place, so
a reader never sees half a batch. Files are read oldest first; a batch is deleted only
after the database has taken it. Inserts are idempotent by trace id (audit/record.py),
so two workers draining the same file, or a batch re-read after a crash between the
insert and the delete, store each trace once.

Bounded by `max_bytes`: past it a batch is dropped, loudly, and the requests go on. Not
fsynced: it outlives the database going away and the process restarting, not the machine
losing power. Pure file I/O: no Django, no event loop (it runs in the database thread)."""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

log = logging.getLogger(__name__)
SUFFIX = ".jsonl"


class TraceSpool:
    def __init__(self, directory: Path, max_bytes: int) -> None:
        self.directory, self.max_bytes = directory, max_bytes
        self._bytes: int | None = None  # what the files hold; measured on first use

    def put(self, batch: list[dict[str, Any]]) -> bool:
        """Keep `batch` until `take` hands it back; False when the spool is full (dropped)."""
        data = b"".join(orjson.dumps(row, default=str) + b"\n" for row in batch)
        if self.size() + len(data) > self.max_bytes:
            log.error("trace spool full (%d bytes); dropping %d traces", self.size(), len(batch))
            return False
        self.directory.mkdir(parents=True, exist_ok=True)
        # Names sort by time, then by a random tail, so two writers never collide.
        name = f"{time.time_ns():020d}-{uuid.uuid4().hex[:12]}"
        part = self.directory / f".{name}.part"
        part.write_bytes(data)
        os.replace(part, self.directory / f"{name}{SUFFIX}")
        self._bytes = self.size() + len(data)
        return True

    def batches(self) -> Iterator[tuple[Path, list[dict[str, Any]]]]:
        """Spooled batches, oldest first, as (file, rows); a file another worker finished
        meanwhile is skipped."""
        for path in sorted(self.directory.glob(f"*{SUFFIX}")):
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                continue
            yield path, [_row(line) for line in data.splitlines() if line]

    def done(self, path: Path) -> None:
        """The database has taken the batch in `path`."""
        try:
            size = path.stat().st_size
            path.unlink()
        except FileNotFoundError:
            return
        self._bytes = max(0, self.size() - size)

    def set_aside(self, path: Path) -> None:
        """A batch the database refuses whole (not for being away): kept for a person to
        look at as `<name>.rejected`, never retried."""
        try:
            os.replace(path, path.with_suffix(".rejected"))
        except FileNotFoundError:
            return
        self._bytes = None  # measured again on next use

    def size(self) -> int:
        if self._bytes is None:
            files = self.directory.glob(f"*{SUFFIX}") if self.directory.is_dir() else ()
            self._bytes = sum(_size(path) for path in files)
        return self._bytes

    def empty(self) -> bool:
        """No batch waiting (another worker's included: the folder is asked, not a count)."""
        return not self.directory.is_dir() or not any(self.directory.glob(f"*{SUFFIX}"))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _row(line: bytes) -> dict[str, Any]:
    """A trace as the record step made it: ids back to UUIDs, the time back to a datetime
    (orjson wrote them as text)."""
    row: dict[str, Any] = orjson.loads(line)
    for name in ("id", "parent_id"):
        if row.get(name):
            row[name] = uuid.UUID(row[name])
    if isinstance(row.get("created_at"), str):
        row["created_at"] = datetime.fromisoformat(row["created_at"])
    return row
