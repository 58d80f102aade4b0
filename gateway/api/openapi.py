"""The OpenAPI 3.1 description of the /v1 surface, served at `GET /v1/openapi.json`.

The document is data, `openapi.yaml` beside this module, served as written; what it says
the code owns (an enum, a limit, a header's name) it says with a `!code NAME` tag, looked up
in `CODE_VALUES`, so it cannot drift from the code. It is loaded and serialized once, at
import, and a tag naming nothing there, or a value there the document never uses, fails the
import. `tests/gateway/api/test_openapi_document.py` checks the document against the code;
`tests/live/api/test_api_schema_fuzz.py` fuzzes the live gateway against it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
import yaml
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from gateway.api.anthropic.blocks import DROPPED_BLOCKS
from gateway.api.anthropic.count_tokens import (
    ENDPOINT_HEADERS,
    ESTIMATED,
    TOKEN_COUNT_HEADER,
    UPSTREAM,
)
from gateway.api.anthropic.messages import FACT_HEADERS
from gateway.api.anthropic.response import STOP_REASONS
from gateway.errors import ANTHROPIC_ERROR_TYPES
from gateway.request_path.params import MAX_STOP_SEQUENCES
from gateway.request_path.parse import CHAT_ROLES
from gateway.upstream.providers.anthropic import MIN_THINKING_BUDGET
from routing.engine.language import ISO_639_1
from routing.engine.resolve import SORT_MODES
from routing.engine.types import MAX_FALLBACK_MODELS, RESIDENCY_ORDER, TASKS, Mode

DOCUMENT = Path(__file__).with_name("openapi.yaml")

# What `!code NAME` stands for, as JSON: a set as a sorted list. A mapping is looked up
# whole or by key (`!code NAME[key]`), and then the document names every key.
CODE_VALUES: dict[str, object] = {
    "CHAT_ROLES": sorted(CHAT_ROLES),
    "MAX_FALLBACK_MODELS": MAX_FALLBACK_MODELS,
    "RESIDENCY_ORDER": list(RESIDENCY_ORDER),
    "Mode": [mode.value for mode in Mode],
    "TASKS": list(TASKS),
    "ISO_639_1": sorted(ISO_639_1),
    "FACT_HEADERS": dict(FACT_HEADERS),
    "DROPPED_BLOCKS": sorted(DROPPED_BLOCKS),
    "MAX_STOP_SEQUENCES": MAX_STOP_SEQUENCES,
    "MIN_THINKING_BUDGET": MIN_THINKING_BUDGET,
    "TOKEN_COUNT_HEADER": TOKEN_COUNT_HEADER,
    "UPSTREAM": UPSTREAM,
    "ESTIMATED": ESTIMATED,
    "ENDPOINT_HEADERS": dict(ENDPOINT_HEADERS),
    "SORT_MODES": list(SORT_MODES),
    # the finish reasons' stop reasons, and the one a matched stop sequence gives
    "STOP_REASONS": sorted({*STOP_REASONS.values(), "stop_sequence"}),
    "ANTHROPIC_ERROR_TYPES": sorted(set(ANTHROPIC_ERROR_TYPES.values())),
}

_REFERENCE = re.compile(r"(?P<name>\w+)(?:\[(?P<key>\w+)\])?")


class DocumentError(ValueError):
    """A `!code` tag naming nothing in the code's values, or a value the document never uses."""


# libyaml's loader where PyYAML was built with it (its wheels are): 64 ms at import, not 140.
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class CodeLoader(_SafeLoader):
    """YAML whose `!code NAME` and `!code NAME[key]` tags are values in `code_values`;
    remembers which it was asked for (`used`: names, with the key or None)."""

    def __init__(self, text: str, code_values: Mapping[str, object]) -> None:
        super().__init__(text)
        self.code_values = code_values
        self.used: set[tuple[str, str | None]] = set()

    def code_value(self, node: yaml.Node) -> object:
        reference: str = self.construct_scalar(node)
        where = f"line {node.start_mark.line + 1}: !code {reference}"
        match = _REFERENCE.fullmatch(reference)
        if match is None:
            raise DocumentError(f"{where}: not NAME or NAME[key]")
        if match["name"] not in self.code_values:
            raise DocumentError(f"{where}: no such code value; they are {sorted(self.code_values)}")
        name, key = match["name"], match["key"]
        value = self.code_values[name]
        self.used.add((name, key))
        if key is None:
            return value
        if not isinstance(value, Mapping) or key not in value:
            raise DocumentError(f"{where}: {name} has no key {key!r}")
        return value[key]


CodeLoader.add_constructor("!code", CodeLoader.code_value)


def load_document(text: str, code_values: Mapping[str, object]) -> dict[str, Any]:
    """The YAML document `text`, its `!code` tags replaced by `code_values`. Raises
    `DocumentError` for a tag naming nothing there, and for a value the document never
    uses (or a key of a mapping it uses by key but does not name)."""
    loader = CodeLoader(text, code_values)
    try:
        document: dict[str, Any] = loader.get_single_data()
    finally:
        loader.dispose()
    unused = []
    for name, value in code_values.items():
        keys = {key for used, key in loader.used if used == name}
        if not keys:
            unused.append(name)
        elif None not in keys and isinstance(value, Mapping):
            unused.extend(f"{name}[{key}]" for key in value if key not in keys)
    if unused:
        raise DocumentError(f"code values the document never uses: {', '.join(unused)}")
    return document


SCHEMA = load_document(DOCUMENT.read_text(encoding="utf-8"), CODE_VALUES)
_SCHEMA_JSON = orjson.dumps(SCHEMA)


@require_GET
async def openapi_json(request: HttpRequest) -> HttpResponse:
    """`GET /v1/openapi.json`: public, like any API's description."""
    return HttpResponse(_SCHEMA_JSON, content_type="application/json")
