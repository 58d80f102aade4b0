"""`instructor` on the official SDK (`instructor.from_openai(openai.OpenAI(...))`) against
the gateway: `response_model` in TOOLS, JSON_SCHEMA and JSON modes, and a streamed partial
object, once per upstream API style.

Not in the `dev` extras: every instructor release (up to 1.17.0) caps `jiter<0.15`, and
openai 3.4 and later need `jiter>=0.16`, so installing it would pin the whole suite's SDK to
openai 3.3. The module skips without it; docs/clients.md says how to run it (a venv with
`instructor==1.17.0`, which brings openai 3.3.0)."""

from __future__ import annotations

import os

import openai
import pydantic
import pytest

from tests.live.clients.conftest import FAKE_PERSON, Person, Routed
from tests.live.installation import Live

if os.environ.get("SWITCHYARD_REQUIRE_INSTRUCTOR"):  # CI's instructor venv: never skip
    import instructor
else:
    instructor = pytest.importorskip(
        "instructor",
        reason="instructor caps jiter<0.15, openai>=3.4 needs jiter>=0.16: see docs/clients.md",
    )

pytestmark = pytest.mark.live

PROMPT = [{"role": "user", "content": "Who wrote the first program? Give name and age."}]


class Guess(pydantic.BaseModel):
    """JSON mode asks for a JSON object, not a schema: the fake answers `{}` (a real model
    follows the schema instructor puts in the prompt), so every field has a default."""

    name: str = "unknown"


def _client(gateway: Live, key: str, mode: instructor.Mode) -> instructor.Instructor:
    sdk = openai.OpenAI(base_url=gateway.base_url, api_key=key, max_retries=0, timeout=20)
    return instructor.from_openai(sdk, mode=mode)


@pytest.mark.parametrize("mode", ["TOOLS", "JSON_SCHEMA"])
def test_response_model(gateway: Live, key: str, routed: Routed, mode: str):
    client = _client(gateway, key, instructor.Mode[mode])
    person, completion = client.chat.completions.create_with_completion(
        model=routed.model, response_model=Person, messages=PROMPT
    )
    # instructor answers an instance of a subclass of the model it was given
    assert isinstance(person, Person)
    assert person.model_dump() == FAKE_PERSON.model_dump()
    assert completion.model == routed.model
    # TOOLS forces a function call; JSON_SCHEMA is a json_schema response_format
    assert bool(completion.choices[0].message.tool_calls) == (mode == "TOOLS")


def test_json_mode(gateway: Live, key: str, routed: Routed):
    client = _client(gateway, key, instructor.Mode.JSON)
    guess = client.chat.completions.create(
        model=routed.model, response_model=Guess, messages=PROMPT
    )
    assert isinstance(guess, Guess)
    assert guess.model_dump() == {"name": "unknown"}


def test_a_streamed_partial_object(gateway: Live, key: str, routed: Routed):
    client = _client(gateway, key, instructor.Mode.TOOLS)
    partials = list(
        client.chat.completions.create_partial(
            model=routed.model, response_model=Person, messages=PROMPT
        )
    )
    assert len(partials) > 1
    assert partials[-1].model_dump() == FAKE_PERSON.model_dump()
