"""Who is calling, and the request's identity and clock: the immutable `Caller` that every
step receives. It is made once, by the authenticate step, from the request's one reading
of the wall clock; a child request (the auto router's classifier call) is a `child` of it."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from gateway.ids import new_uuid
from gateway.state.snapshot import KeyEntry, Snapshot, WorkspaceEntry
from routing.engine.types import PolicyView


@dataclass(frozen=True, slots=True)
class Caller:
    request_id: str
    snapshot: Snapshot  # the configuration this request is served with, start to end
    key: KeyEntry
    workspace: WorkspaceEntry
    started_at: float  # wall clock, epoch seconds: the request's one reading of it
    key_secret: str = field(default="", repr=False)  # the key as sent, for scrubbing only
    trace_id: uuid.UUID = field(default_factory=new_uuid)
    started_perf: float = field(default_factory=time.perf_counter)
    purpose: str = ""  # "auto_routing_classifier" for the auto router's child request
    parent_id: uuid.UUID | None = None  # the client's trace, for a child request

    @property
    def policy(self) -> PolicyView:
        """The workspace's policy narrowed to this key's scope: its preset and allowed
        models (routing/engine/key_scope.py). Every decision of the request reads it."""
        return self.key.policy or self.workspace.policy

    @property
    def created(self) -> int:
        return int(self.started_at)

    @property
    def completion_ids(self) -> dict[str, Any]:
        return {"completion_id": f"chatcmpl-{self.trace_id.hex}", "created": self.created}

    @property
    def message_id(self) -> str:
        """The id of an Anthropic `message` answering this request (R-API-9)."""
        return f"msg_{self.trace_id.hex}"

    def elapsed_s(self) -> float:
        return time.perf_counter() - self.started_perf

    def elapsed_ms(self) -> int:
        return int(self.elapsed_s() * 1000)

    def now(self) -> float:
        """Wall-clock time now, on the request's clock: its start plus the monotonic time
        since (cooldowns and live samples are stamped with it)."""
        return self.started_at + self.elapsed_s()

    def child(self, purpose: str) -> Caller:
        """A request the gateway makes on this caller's behalf: same workspace, key and
        billing, its own trace pointing at this one."""
        return replace(self, trace_id=new_uuid(), purpose=purpose, parent_id=self.trace_id)
