"""Model-id normalisation (SPEC R-MOD-3, D-11): vendor prefixes and date suffixes resolve
to the catalog slug. Pure."""

from __future__ import annotations

import re
from collections.abc import Mapping

# `-2024-08-06` or `-20240806` at the end of an id.
_DATE_SUFFIX = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8})$")


def resolve_model_name(names: Mapping[str, str], raw: str) -> str | None:
    """Return the canonical slug for `raw`, or None.

    `names` maps every accepted spelling (slug, alias, bare name when unique) to a slug.
    Tried in order: as given; without a date suffix; without the vendor prefix; both.
    """
    candidate = raw.strip()
    undated = _DATE_SUFFIX.sub("", candidate)
    bare = candidate.split("/", 1)[1] if "/" in candidate else candidate
    bare_undated = _DATE_SUFFIX.sub("", bare)
    for spelling in (candidate, undated, bare, bare_undated):
        slug = names.get(spelling)
        if slug is not None:
            return slug
    return None
