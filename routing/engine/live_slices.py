"""What a worker hands the live-metric rollup (SPEC R-OBS-2): a slice — its observations
between two ticks, one mergeable window per endpoint — and how slices add up. Pure; the
stores and the rollup that writes `EndpointStats` are routing/rollup.py."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import orjson

from routing.engine.live_window import Window


@dataclass(frozen=True, slots=True)
class Slice:
    worker: str
    end: float  # epoch seconds, when it was taken: what the stores keep and trim by
    seq: int  # the worker's observations numbered up to this one are in it
    windows: dict[str, tuple[str, Window]]  # endpoint id -> (provider, window)

    def dumps(self) -> bytes:
        windows = {eid: [p, w.to_json()] for eid, (p, w) in self.windows.items()}
        return orjson.dumps(
            {"worker": self.worker, "end": self.end, "seq": self.seq, "windows": windows}
        )

    @classmethod
    def loads(cls, raw: bytes | str) -> Slice:
        data = orjson.loads(raw)
        windows = {eid: (p, Window.from_json(w)) for eid, (p, w) in data["windows"].items()}
        return cls(str(data["worker"]), float(data["end"]), int(data["seq"]), windows)


def merge_slices(slices: Iterable[Slice]) -> tuple[dict[str, tuple[str, Window]], dict[str, int]]:
    """Per endpoint, every slice's window added up; per worker, the last observation
    number its slices hold (what its router need not add again)."""
    windows: dict[str, tuple[str, Window]] = {}
    included: dict[str, int] = {}
    for piece in slices:
        included[piece.worker] = max(piece.seq, included.get(piece.worker, piece.seq))
        for endpoint_id, (provider, window) in piece.windows.items():
            windows.setdefault(endpoint_id, (provider, Window()))[1].merge(window)
    return windows, included
