"""Model id normalisation (SPEC R-MOD-3, D-11)."""

import pytest

from routing.engine.names import resolve_model_name

NAMES = {
    "openai/gpt-4o": "openai/gpt-4o",
    "gpt-4o": "openai/gpt-4o",
    "meta/llama-3.3-70b": "meta/llama-3.3-70b",
    "llama-3.3-70b": "meta/llama-3.3-70b",
    "llama-3.3-70b-versatile": "meta/llama-3.3-70b",
}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("openai/gpt-4o", "openai/gpt-4o"),
        ("gpt-4o", "openai/gpt-4o"),
        ("gpt-4o-2024-08-06", "openai/gpt-4o"),
        ("openai/gpt-4o-2024-08-06", "openai/gpt-4o"),
        ("gpt-4o-20240806", "openai/gpt-4o"),
        ("azure/gpt-4o", "openai/gpt-4o"),  # another vendor prefix resolves by bare name
        ("llama-3.3-70b-versatile", "meta/llama-3.3-70b"),  # alias
        (" meta/llama-3.3-70b ", "meta/llama-3.3-70b"),
        ("gpt-5", None),
        ("gpt-4o-2024", None),  # not a date suffix
    ],
)
def test_r_mod_3_model_ids_normalise_to_the_catalog_slug(raw, expected):
    assert resolve_model_name(NAMES, raw) == expected
