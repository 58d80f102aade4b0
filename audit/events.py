"""The one way an admin change is audited (SPEC R-OBS-4, decision 0003): `record_event`
writes an AdminEvent whose `changes` hold the before and after of each field that changed,
never a secret, and only values JSON can hold.

Services call it inside the transaction of the change they audit, so a change and its
event commit together or not at all. Everything but the one insert is pure (`diff`,
`event_changes`), so what an event may hold is tested without a database:

- `{"field": {"before": b, "after": a}}` for each field whose value differs; a row created
  has `before` None (None for every field), a row deleted `after` None. A field missing on
  one side is None there, so a created row lists only the fields it was given a value.
- The value of a secret-named field (`is_secret_name`: API key plaintext and HMAC, BYOK key
  and ciphertext, management token, anything named `*secret*`, `*token*`, `*password*`,
  `*key_material*`, `*ciphertext*`) is shown as `SECRET`, and so is any binary value (in
  this code base always key material: ciphertexts, nonces). None stays None: the event
  says a secret was set, replaced or removed, never what it was.
- Datetimes and dates are ISO 8601 strings, Decimals and UUIDs strings, tuples and sets
  lists.

`extra` carries what is not a field's change but says what happened (a route's diff lines,
the numbers the rollout guard compared, an apply's counts): its entries sit beside the
fields in `changes`, redacted the same way.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import date, datetime, time
from decimal import Decimal
from enum import Enum
from typing import Any
from uuid import UUID

from audit.models import AdminEvent
from workspaces.models import Workspace

SECRET = "[secret]"  # what an event shows in place of a secret's value
# AdminEvent's column widths: an over-long actor or target is cut, never refused.
ACTOR_MAX_CHARS, ACTION_MAX_CHARS, TARGET_MAX_CHARS = 150, 64, 200

# Lower-case field names that hold a secret. `token` only as a bearer token: not
# `tokens_per_minute` or `max_tokens`, which count tokens of text. `api_key` as a word:
# not `api_keys`, a credential's list of key lookup ids.
_SECRET_NAME = re.compile(
    r"secret|password|passphrase|ciphertext|plaintext|hmac|key_material|private_key"
    r"|token(?!s)|(?:^|_)api_?key(?:$|_)|(?:^|_)key_hash"
)
_DIFF_SIDES = frozenset({"before", "after"})


def is_secret_name(name: str) -> bool:
    """True when a field of this name holds a secret (the module docstring lists them)."""
    return _SECRET_NAME.search(name.lower()) is not None


def diff(
    before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
) -> dict[str, dict[str, Any]]:
    """`{field: {"before": b, "after": a}}` for each field whose value differs, secrets
    replaced by `SECRET`, every value JSON-safe. `before` None: the row was created;
    `after` None: it was deleted. A value differs when it is unequal both as given and as
    JSON holds it (an instant in another time zone is no change, nor a tuple of its list),
    and secrets compare before they are hidden (a replaced key is a change)."""
    old, new = before or {}, after or {}
    changes = {}
    for field in [*old, *(name for name in new if name not in old)]:
        was, now = _plain(old.get(field)), _plain(new.get(field))
        if old.get(field) != new.get(field) and was != now:
            secret = is_secret_name(field)
            changes[field] = {"before": _shown(was, secret), "after": _shown(now, secret)}
    return changes


def event_changes(
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """What an event's `changes` column holds: `diff(before, after)` and the `extra`
    entries beside it. Raises ValueError when an extra entry has a changed field's name."""
    changes: dict[str, Any] = diff(before, after)
    for name, value in (extra or {}).items():
        if name in changes:
            raise ValueError(f"extra entry {name!r} would hide the change of that field")
        changes[name] = _shown(_plain(value), is_secret_name(name))
    return changes


def record_event(
    *,
    actor: str,
    workspace: Workspace | int | None,
    action: str,
    target: str,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    extra: Mapping[str, Any] | None = None,
) -> AdminEvent:
    """Insert one AdminEvent (`workspace`: the row, its id, or None for the installation's
    catalog). Call it inside the transaction of the change it audits."""
    workspace_id = workspace.pk if isinstance(workspace, Workspace) else workspace
    event: AdminEvent = AdminEvent.objects.create(
        actor=actor[:ACTOR_MAX_CHARS],
        workspace_id=workspace_id,
        action=action[:ACTION_MAX_CHARS],
        target=target[:TARGET_MAX_CHARS],
        changes=event_changes(before, after, extra),
    )
    return event


def _plain(value: Any) -> Any:
    """`value` as JSON holds it; bytes are kept, for `_shown` to hide."""
    if isinstance(value, Enum):
        return _plain(value.value)
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)  # JSON has no NaN or infinity
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, Decimal | UUID):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, set | frozenset):
        return sorted((_plain(item) for item in value), key=repr)
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return str(value)


def _shown(value: Any, secret: bool) -> Any:
    """A plain value as an event may hold it: a secret's masked, and inside mappings the
    value of every secret-named key too, however deep."""
    if secret:
        return _masked(value)
    if isinstance(value, bytes):
        return SECRET
    if isinstance(value, dict):
        return {key: _shown(item, is_secret_name(key)) for key, item in value.items()}
    if isinstance(value, list):
        return [_shown(item, False) for item in value]
    return value


def _masked(value: Any) -> Any:
    """A secret's value: None stays None (there was none), a `{before, after}` pair keeps
    its shape (an apply's per-object diffs), anything else is `SECRET`."""
    if value is None:
        return None
    if isinstance(value, dict) and value and set(value) <= _DIFF_SIDES:
        return {side: _masked(item) for side, item in value.items()}
    return SECRET
