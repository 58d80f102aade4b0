"""`langchain-openai`'s `ChatOpenAI` pointed at the gateway (`base_url`, a workspace key as
`api_key`, a catalog id as `model`): invoke, stream, tools and the tool loop, structured
output by json_schema (the default) and by function calling, once per upstream API style
and once per wire API (Chat Completions, the default, and `use_responses_api=True`)."""

from __future__ import annotations

import openai
import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI, OpenAIEmbeddings

from tests.live.clients.conftest import (
    EMBEDDING,
    FAKE_PERSON,
    MAX_TOKENS,
    PAUSE_PROMPT,
    WEATHER_ARGUMENTS,
    WEATHER_PROMPT,
    Person,
    Routed,
)
from tests.live.installation import Live

pytestmark = pytest.mark.live


@tool
def get_weather(location: str) -> str:
    """The current weather in a city."""
    return f"18C and sunny in {location}"


@pytest.fixture(autouse=True)
def _no_tracing(monkeypatch: pytest.MonkeyPatch) -> None:
    """LangSmith tracing is off unless the environment turns it on: make sure it is off."""
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"):
        monkeypatch.setenv(name, "false")


@pytest.fixture(params=[False, True], ids=["chat-completions", "responses"])
def chat(request: pytest.FixtureRequest, gateway: Live, key: str, routed: Routed) -> ChatOpenAI:
    return ChatOpenAI(
        base_url=gateway.base_url,
        api_key=key,
        model=routed.model,
        max_tokens=MAX_TOKENS,
        max_retries=0,
        timeout=20,
        use_responses_api=request.param,
    )


def test_invoke(chat: ChatOpenAI, routed: Routed):
    message = chat.invoke(PAUSE_PROMPT)
    assert isinstance(message, AIMessage)
    assert routed.reply in message.text
    assert message.response_metadata["model_name"] == routed.model
    assert message.usage_metadata is not None
    assert message.usage_metadata["output_tokens"] == MAX_TOKENS


def test_stream(chat: ChatOpenAI, routed: Routed):
    chunks = list(chat.stream(PAUSE_PROMPT))
    assert all(isinstance(c, AIMessageChunk) for c in chunks)
    assert len(chunks) > 2
    whole = chunks[0]
    for chunk in chunks[1:]:
        whole += chunk
    assert routed.reply in whole.text
    assert whole.response_metadata["model_name"] == routed.model
    assert whole.usage_metadata is not None
    assert whole.usage_metadata["output_tokens"] == MAX_TOKENS


def test_bind_tools_a_tool_call_and_the_tool_loop(chat: ChatOpenAI, routed: Routed):
    with_tools = chat.bind_tools([get_weather])
    messages: list = [HumanMessage(WEATHER_PROMPT)]
    asked = with_tools.invoke(messages)
    [call] = asked.tool_calls
    assert (call["name"], call["args"]) == ("get_weather", WEATHER_ARGUMENTS)
    assert call["id"]
    # run the tool and send its result back: the model answers with text
    messages += [asked, ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"])]
    answer = with_tools.invoke(messages)
    assert answer.tool_calls == []
    assert routed.reply in answer.text


def test_with_structured_output_default_json_schema(chat: ChatOpenAI):
    structured = chat.with_structured_output(Person, include_raw=True)
    result = structured.invoke("Who wrote the first program?")
    assert result["parsing_error"] is None
    assert result["parsed"] == FAKE_PERSON
    assert result["raw"].tool_calls == []  # a json_schema answer (text.format), not a tool call


def test_with_structured_output_function_calling(chat: ChatOpenAI):
    structured = chat.with_structured_output(Person, method="function_calling", include_raw=True)
    result = structured.invoke("Who wrote the first program?")
    assert result["parsing_error"] is None
    assert result["parsed"] == FAKE_PERSON
    assert [c["name"] for c in result["raw"].tool_calls] == ["Person"]


def test_a_field_anthropic_cannot_express_is_a_bad_request(gateway: Live, key: str, routed: Routed):
    # a Chat Completions field (the Responses API has no penalties)
    penalised = ChatOpenAI(
        base_url=gateway.base_url,
        api_key=key,
        model=routed.model,
        max_tokens=MAX_TOKENS,
        max_retries=0,
        presence_penalty=0.5,
    )
    if routed.fake == "anthro":  # refused by the Anthropic adapter, not lost
        with pytest.raises(openai.BadRequestError) as caught:
            penalised.invoke(PAUSE_PROMPT)
        assert caught.value.code == "unsupported_request"
        assert "presence_penalty" in caught.value.message
    else:
        assert routed.reply in penalised.invoke(PAUSE_PROMPT).text


def test_embeddings_on_the_openai_style_upstream(gateway: Live, key: str):
    # check_embedding_ctx_length=False: otherwise langchain tokenizes the input with
    # tiktoken first, which downloads its encoding from the internet on first use (and
    # sends token ids, not text, which only OpenAI's own models read).
    embeddings = OpenAIEmbeddings(
        model=EMBEDDING,
        base_url=gateway.base_url,
        api_key=key,
        check_embedding_ctx_length=False,
        max_retries=0,
    )
    vectors = embeddings.embed_documents(["hello", "world"])
    assert [len(v) for v in vectors] == [8, 8]  # the fake's dimension
    assert embeddings.embed_query("hello") == vectors[0]
