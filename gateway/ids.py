"""Request and trace ids. They identify, they do not authorise (trace lookups are scoped
to the caller's workspace), so a per-process PRNG seeded from the OS is enough — and it
avoids an `os.urandom` system call per id, which costs tens of microseconds on some VMs."""

from __future__ import annotations

import os
import random
import uuid

_random = random.Random(os.urandom(32))


def new_uuid() -> uuid.UUID:
    return uuid.UUID(int=_random.getrandbits(128), version=4)


def new_request_id() -> str:
    return f"{_random.getrandbits(128):032x}"
