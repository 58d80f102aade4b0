"""Model-id normalisation (SPEC R-MOD-3, D-11): vendor prefixes and date suffixes resolve
to the catalog slug. Pure."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

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


def name_index(models: Iterable[tuple[str, Iterable[str]]]) -> dict[str, str]:
    """Every accepted spelling of each `(slug, aliases)` -> its slug: the slug, its
    aliases, and its bare name when that is unique in the catalog (SPEC D-11). A slug
    always wins over another model's alias of the same spelling."""
    rows = [(slug, tuple(aliases)) for slug, aliases in models]
    bare_count: dict[str, int] = {}
    for slug, _aliases in rows:
        bare = slug.split("/", 1)[-1]
        bare_count[bare] = bare_count.get(bare, 0) + 1
    names: dict[str, str] = {}
    for slug, aliases in rows:
        bare = slug.split("/", 1)[-1]
        if bare_count[bare] == 1:
            names.setdefault(bare, slug)
        for alias in aliases:
            names.setdefault(alias, slug)
    for slug, _aliases in rows:
        names[slug] = slug
    return names
