"""Body + headers → RoutingRequest (SPEC R-MOD-1, R-MOD-3..6, R-DEC-2, R-DEC-6, D-5, D-11,
D-13, D-14, R-BEY-10): model ids, suffixes, the fallback chain, the `provider` and
`routing` objects, derived facts, and every 400 naming its field. No database."""

import math

import pytest

from routing.engine.resolve import CatalogNames, ResolveError, UnknownModel, resolve
from routing.engine.types import LatencyTarget, Mode, ProviderPrefs, RoutingRequest

_SLUGS = ("openai/gpt-4o", "meta/llama-3.3-70b", "meta/llama-3.3-70b:free",
          "mistral/mistral-small", "mistral/mistral-embed",
          *(f"acme/m{i}" for i in range(1, 10)))  # fmt: skip
NAMES = {slug: slug for slug in _SLUGS} | {
    "gpt-4o": "openai/gpt-4o",  # bare name, unique in the catalog
    "llama-3.3-70b": "meta/llama-3.3-70b",
    "llama-3.3-70b-versatile": "meta/llama-3.3-70b",  # alias
    "mistral-small": "mistral/mistral-small",
    "mistral-embed": "mistral/mistral-embed",
}
CATALOG = CatalogNames(
    names=NAMES,
    providers=frozenset({"groq", "openai", "mistral", "together"}),
    virtual=frozenset({"team-pool"}),
)
HELLO = [{"role": "user", "content": "hi"}]


def chat(**body):
    body.setdefault("messages", HELLO)
    return resolve(body, {}, CATALOG)


# (case, model as sent, canonical model, pinned provider, mode, mode source)
MODEL_IDS = [
    ("canonical slug", "openai/gpt-4o", "openai/gpt-4o", None, Mode.BALANCED, "default"),
    ("bare name", "gpt-4o", "openai/gpt-4o", None, Mode.BALANCED, "default"),
    ("dashed date suffix", "gpt-4o-2024-08-06", "openai/gpt-4o", None, Mode.BALANCED, "default"),
    ("compact date suffix", "openai/gpt-4o-20240806", "openai/gpt-4o", None, Mode.BALANCED,
     "default"),
    ("another vendor prefix", "azure/gpt-4o", "openai/gpt-4o", None, Mode.BALANCED, "default"),
    ("alias", "llama-3.3-70b-versatile", "meta/llama-3.3-70b", None, Mode.BALANCED, "default"),
    ("surrounding spaces", "  gpt-4o ", "openai/gpt-4o", None, Mode.BALANCED, "default"),
    ("provider:model", "groq:meta/llama-3.3-70b", "meta/llama-3.3-70b", "groq", Mode.BALANCED,
     "default"),
    ("provider:bare name", "GROQ:llama-3.3-70b", "meta/llama-3.3-70b", "groq", Mode.BALANCED,
     "default"),
    ("provider:model with a date", "openai:gpt-4o-2024-08-06", "openai/gpt-4o", "openai",
     Mode.BALANCED, "default"),
    (":free stays part of the id", "meta/llama-3.3-70b:free", "meta/llama-3.3-70b:free", None,
     Mode.BALANCED, "default"),
    ("provider, :free and a suffix", "groq:meta/llama-3.3-70b:free:nitro",
     "meta/llama-3.3-70b:free", "groq", Mode.THROUGHPUT, "suffix"),
    (":nitro", "gpt-4o:nitro", "openai/gpt-4o", None, Mode.THROUGHPUT, "suffix"),
    (":cheap", "gpt-4o:cheap", "openai/gpt-4o", None, Mode.PRICE, "suffix"),
    (":fast", "gpt-4o:FAST", "openai/gpt-4o", None, Mode.LATENCY, "suffix"),
    ("virtual model kept as is", "team-pool", "team-pool", None, Mode.BALANCED, "default"),
    ("virtual model with a suffix", "team-pool:cheap", "team-pool", None, Mode.PRICE, "suffix"),
]  # fmt: skip


@pytest.mark.parametrize(("_case", "sent", "model", "pinned", "mode", "source"), MODEL_IDS)
def test_r_mod_3_r_mod_4_r_mod_5_model_ids_resolve(_case, sent, model, pinned, mode, source):
    # when
    request = chat(model=sent)
    # then
    assert (request.requested_model, request.model, request.auto) == (sent, model, False)
    assert (request.pinned_provider, request.mode, request.mode_source) == (pinned, mode, source)


@pytest.mark.parametrize(
    ("sent", "mode"),
    [("auto", Mode.BALANCED), ("switchyard/auto", Mode.BALANCED),
     ("switchyard-auto", Mode.BALANCED), ("switchyard:auto", Mode.BALANCED),
     ("Auto", Mode.BALANCED), ("auto:cheap", Mode.PRICE)],
)  # fmt: skip
def test_r_mod_1_auto_aliases_select_the_auto_router(sent, mode):
    request = chat(model=sent)
    assert (request.auto, request.model, request.requested_model) == (True, None, sent)
    assert request.mode == mode


def test_r_mod_1_r_mod_4_auto_within_one_provider():
    request = chat(model="groq:auto")
    assert (request.auto, request.model, request.pinned_provider) == (True, None, "groq")


@pytest.mark.parametrize(
    ("sent", "param"),
    [("gpt-5", "model"), ("groq:gpt-5", "model"),
     ("meta/llama-3.3-70b:beta", "model"),  # an unknown `:tag` is not dropped silently
     ("unknown:gpt-4o", "model"),  # not a provider: the colon stays part of the id
     ("gpt-4o:turbo", "model")],  # only :nitro, :cheap and :fast are routing suffixes
)  # fmt: skip
def test_d_11_unknown_model_is_404_naming_the_field(sent, param):
    with pytest.raises(UnknownModel) as caught:
        chat(model=sent)
    assert (caught.value.model, caught.value.param) == (sent, param)


def test_r_mod_6_unknown_fallback_names_its_index():
    with pytest.raises(UnknownModel) as caught:
        chat(model="gpt-4o", models=["acme/m1", "acme/m2", "nope"])
    assert (caught.value.model, caught.value.param) == ("nope", "models[2]")


def test_r_mod_6_model_is_primary_and_models_are_fallbacks():
    # when: OpenRouter clients often repeat the primary inside `models`
    request = chat(model="gpt-4o", models=["openai/gpt-4o", "llama-3.3-70b", "acme/m1:nitro",
                                           "meta/llama-3.3-70b", "team-pool"])  # fmt: skip
    # then: normalised, repeats and the primary dropped, fallback suffixes ignored
    assert request.model == "openai/gpt-4o"
    assert request.fallbacks == ("meta/llama-3.3-70b", "acme/m1", "team-pool")
    assert (request.mode, request.mode_source) == (Mode.BALANCED, "default")


def test_r_mod_6_without_model_the_first_of_models_is_primary():
    request = chat(models=["groq:llama-3.3-70b:cheap", "gpt-4o"])
    assert request.requested_model == "groq:llama-3.3-70b:cheap"
    assert (request.model, request.pinned_provider) == ("meta/llama-3.3-70b", "groq")
    assert (request.fallbacks, request.mode) == (("openai/gpt-4o",), Mode.PRICE)


def test_d_5_eight_fallbacks_are_accepted():
    eight = [f"acme/m{i}" for i in range(1, 9)]
    assert len(chat(model="gpt-4o", models=eight).fallbacks) == 8
    assert len(chat(models=["gpt-4o", *eight]).fallbacks) == 8  # models[0] is the primary


@pytest.mark.parametrize(
    "fields",
    [{"model": "gpt-4o", "models": [f"acme/m{i}" for i in range(1, 10)]},
     {"model": "gpt-4o", "models": ["gpt-4o"] * 2 + [f"acme/m{i}" for i in range(1, 8)]},
     {"models": ["gpt-4o", *(f"acme/m{i}" for i in range(1, 10))]},
     {"model": "gpt-4o", "models": [f"unknown/m{i}" for i in range(9)]}],  # 400 before 404
)  # fmt: skip
def test_d_5_more_than_eight_fallback_entries_is_a_400_naming_models(fields):
    with pytest.raises(ResolveError) as caught:
        chat(**fields)
    assert caught.value.param == "models"


# (case, request fields, preset mode, workspace mode, expected mode, expected source)
PRECEDENCE = [
    ("suffix beats request mode", {"model": "gpt-4o:nitro", "routing": {"mode": "price"}},
     "latency", "price", Mode.THROUGHPUT, "suffix"),
    ("suffix beats provider.sort", {"model": "gpt-4o:cheap", "provider": {"sort": "latency"}},
     None, None, Mode.PRICE, "suffix"),
    ("routing.mode beats preset", {"routing": {"mode": "latency"}}, "price", "throughput",
     Mode.LATENCY, "request"),
    ("provider.sort is a request mode", {"provider": {"sort": "throughput"}}, "price", None,
     Mode.THROUGHPUT, "request"),
    ("routing.mode beats a different provider.sort",
     {"routing": {"mode": "balanced"}, "provider": {"sort": "price"}}, None, None,
     Mode.BALANCED, "request"),
    ("preset beats workspace", {}, "price", "latency", Mode.PRICE, "preset"),
    ("workspace default", {}, None, "throughput", Mode.THROUGHPUT, "workspace"),
    ("nothing set", {}, None, None, Mode.BALANCED, "default"),
    ("blank configuration counts as unset", {}, "", "", Mode.BALANCED, "default"),
]  # fmt: skip


@pytest.mark.parametrize(("_case", "fields", "preset", "workspace", "mode", "source"), PRECEDENCE)
def test_r_mod_5_r_dec_6_mode_precedence(_case, fields, preset, workspace, mode, source):
    body = {"model": "gpt-4o", "messages": HELLO} | fields
    request = resolve(body, {}, CATALOG, preset_mode=preset, workspace_mode=workspace)
    assert (request.mode, request.mode_source) == (mode, source)


def test_r_mod_5_suffix_beats_request_mode():
    request = resolve({"model": "gpt-4o:fast", "messages": HELLO, "routing": {"mode": "price"},
                       "provider": {"sort": "throughput"}}, {}, CATALOG,
                      preset_mode="price", workspace_mode="price")  # fmt: skip
    assert (request.mode, request.mode_source) == (Mode.LATENCY, "suffix")
    assert request.provider.sort == Mode.THROUGHPUT  # kept as sent; the mode is what counts


def test_r_dec_6_a_bad_configured_mode_is_a_bug_not_a_400():
    with pytest.raises(ValueError, match="fastest"):
        resolve({"model": "gpt-4o", "messages": HELLO}, {}, CATALOG, preset_mode="fastest")


def test_r_dec_2_r_bey_10_provider_object_is_read_in_full():
    # given
    provider = {
        "order": ["Groq", "together", "groq"], "allow_fallbacks": False,
        "only": ["groq", "together"], "ignore": ["mistral"], "sort": {"by": "latency"},
        "max_price": {"prompt": 1, "completion": 2.5}, "preferred_min_throughput": {"p50": 40},
        "preferred_max_latency": {"p50": 0.5, "p99": 2}, "regions": ["EU-West-1"],
        "require_parameters": True, "data_collection": "deny", "zdr": True,
        "quantizations": ["fp8", "int8"], "enforce_distillable_text": False,
        "cache_aware_routing": False,
    }  # fmt: skip
    # when
    request = chat(model="gpt-4o", provider=provider)
    # then
    assert request.provider == ProviderPrefs(
        order=("groq", "together"), allow_fallbacks=False, only=frozenset({"groq", "together"}),
        ignore=frozenset({"mistral"}), sort=Mode.LATENCY, max_price_prompt=1.0,
        max_price_completion=2.5, preferred_min_throughput=40.0,
        preferred_max_latency=LatencyTarget(p50=500.0, p99=2000.0),
        regions=frozenset({"eu-west-1"}),
        extra={"require_parameters": True, "data_collection": "deny", "zdr": True,
               "quantizations": ["fp8", "int8"], "enforce_distillable_text": False,
               "cache_aware_routing": False},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("provider", "expected"),
    [(None, ProviderPrefs()),
     ({"order": None, "max_price": {"prompt": None, "completion": 0}},
      ProviderPrefs(max_price_completion=0.0)),  # JSON null means "not given"
     ({"preferred_max_latency": 1.5},  # seconds, as OpenRouter; LatencyTarget holds ms
      ProviderPrefs(preferred_max_latency=LatencyTarget(p50=1500.0))),
     ({"preferred_max_latency": {}}, ProviderPrefs()),
     ({"preferred_min_throughput": 25}, ProviderPrefs(preferred_min_throughput=25.0)),
     ({"sort": {"by": "price", "partition": "model"}}, ProviderPrefs(sort=Mode.PRICE))],
)  # fmt: skip
def test_r_dec_2_provider_object_shapes(provider, expected):
    assert chat(model="gpt-4o", provider=provider).provider == expected


def test_r_dec_4_d_13_residency_and_regions_are_read():
    request = chat(model="gpt-4o", residency="eu-owned", provider={"regions": ["eu-central-1"]})
    assert (request.residency, request.provider.regions) == ("eu-owned", {"eu-central-1"})


# (case, body fields, headers, param named by the 400)
INVALID = [
    ("no model", {"model": None}, {}, "model"),
    ("model not a string", {"model": 4}, {}, "model"),
    ("empty model", {"model": " "}, {}, "model"),
    ("only a suffix", {"model": ":nitro"}, {}, "model"),
    ("provider without a model", {"model": "groq:"}, {}, "model"),
    ("models not an array", {"models": "gpt-4o"}, {}, "models"),
    ("empty models without model", {"model": None, "models": []}, {}, "model"),
    ("models entry not a string", {"models": ["gpt-4o", 3]}, {}, "models[1]"),
    ("auto as a fallback", {"models": ["gpt-4o", "auto"]}, {}, "models[1]"),
    ("provider pin on a fallback", {"models": ["gpt-4o", "groq:llama-3.3-70b"]}, {},
     "models[1]"),
    ("provider not an object", {"provider": "groq"}, {}, "provider"),
    ("unknown provider key", {"provider": {"fallbacks": True}}, {}, "provider.fallbacks"),
    ("order not an array", {"provider": {"order": "groq"}}, {}, "provider.order"),
    ("order entry empty", {"provider": {"order": ["groq", ""]}}, {}, "provider.order[1]"),
    ("order entry a number", {"provider": {"order": ["groq", 7]}}, {}, "provider.order[1]"),
    ("only entry null", {"provider": {"only": [None]}}, {}, "provider.only[0]"),
    ("ignore not an array", {"provider": {"ignore": {"groq": True}}}, {}, "provider.ignore"),
    ("regions entry", {"provider": {"regions": ["eu-west-1", 1]}}, {}, "provider.regions[1]"),
    ("allow_fallbacks", {"provider": {"allow_fallbacks": "no"}}, {},
     "provider.allow_fallbacks"),
    ("sort value", {"provider": {"sort": "cheapest"}}, {}, "provider.sort"),
    ("sort balanced", {"provider": {"sort": "balanced"}}, {}, "provider.sort"),
    ("sort.by", {"provider": {"sort": {"by": "speed"}}}, {}, "provider.sort.by"),
    ("sort.partition none", {"provider": {"sort": {"by": "price", "partition": "none"}}}, {},
     "provider.sort.partition"),
    ("sort key", {"provider": {"sort": {"order": "price"}}}, {}, "provider.sort.order"),
    ("max_price not an object", {"provider": {"max_price": 5}}, {}, "provider.max_price"),
    ("max_price negative", {"provider": {"max_price": {"prompt": -1}}}, {},
     "provider.max_price.prompt"),
    ("max_price a string", {"provider": {"max_price": {"completion": "1"}}}, {},
     "provider.max_price.completion"),
    ("max_price a boolean", {"provider": {"max_price": {"prompt": True}}}, {},
     "provider.max_price.prompt"),
    ("max_price infinite", {"provider": {"max_price": {"prompt": math.inf}}}, {},
     "provider.max_price.prompt"),
    ("max_price request cap", {"provider": {"max_price": {"request": 1}}}, {},
     "provider.max_price.request"),
    ("min throughput zero", {"provider": {"preferred_min_throughput": 0}}, {},
     "provider.preferred_min_throughput"),
    ("min throughput p90", {"provider": {"preferred_min_throughput": {"p90": 10}}}, {},
     "provider.preferred_min_throughput.p90"),
    ("min throughput p50", {"provider": {"preferred_min_throughput": {"p50": -5}}}, {},
     "provider.preferred_min_throughput.p50"),
    ("max latency a string", {"provider": {"preferred_max_latency": "fast"}}, {},
     "provider.preferred_max_latency"),
    ("max latency p75", {"provider": {"preferred_max_latency": {"p75": 1}}}, {},
     "provider.preferred_max_latency.p75"),
    ("max latency p99 zero", {"provider": {"preferred_max_latency": {"p99": 0}}}, {},
     "provider.preferred_max_latency.p99"),
    ("require_parameters", {"provider": {"require_parameters": "yes"}}, {},
     "provider.require_parameters"),
    ("zdr", {"provider": {"zdr": 1}}, {}, "provider.zdr"),
    ("data_collection", {"provider": {"data_collection": "maybe"}}, {},
     "provider.data_collection"),
    ("quantizations", {"provider": {"quantizations": "int8"}}, {}, "provider.quantizations"),
    ("cache_aware_routing", {"provider": {"cache_aware_routing": "off"}}, {},
     "provider.cache_aware_routing"),
    ("routing not an object", {"routing": ["price"]}, {}, "routing"),
    ("unknown routing key", {"routing": {"tier": "hard"}}, {}, "routing.tier"),
    ("routing.mode", {"routing": {"mode": "fastest"}}, {}, "routing.mode"),
    ("routing.session_affinity", {"routing": {"session_affinity": "off"}}, {},
     "routing.session_affinity"),
    ("routing.task", {"routing": {"task": "chat"}}, {}, "routing.task"),
    ("routing.language upper case", {"routing": {"language": "DE"}}, {}, "routing.language"),
    ("routing.language a name", {"routing": {"language": "german"}}, {}, "routing.language"),
    ("routing.language not ISO", {"routing": {"language": "xx"}}, {}, "routing.language"),
    ("residency", {"residency": "eu"}, {}, "residency"),
    ("session_id a number", {"session_id": 5}, {}, "session_id"),
    ("session_id empty", {"session_id": ""}, {}, "session_id"),
    ("session_id too long", {"session_id": "s" * 257}, {}, "session_id"),
    ("session header too long", {}, {"x-session-id": "s" * 257}, "X-Session-Id"),
    ("metadata not an object", {"metadata": "x"}, {}, "metadata"),
    ("metadata value a number", {"metadata": {"team": 1}}, {}, "metadata.team"),
    ("metadata value too long", {"metadata": {"team": "t" * 513}}, {}, "metadata.team"),
    ("metadata too many pairs", {"metadata": {f"k{i}": "v" for i in range(17)}}, {},
     "metadata"),
]  # fmt: skip


@pytest.mark.parametrize(("_case", "fields", "headers", "param"), INVALID)
def test_r_api_3_every_invalid_field_is_a_400_naming_it(_case, fields, headers, param):
    body = {"model": "gpt-4o", "messages": HELLO} | fields
    with pytest.raises(ResolveError) as caught:
        resolve(body, headers, CATALOG)
    assert caught.value.param == param
    assert f"`{param}`" in caught.value.message


def test_d_14_a_full_chat_request_resolves_exactly():
    # given
    body = {
        "model": "groq:llama-3.3-70b:fast",
        "models": ["mistral-small"],
        "messages": [
            {"role": "system", "content": "You are terse." * 4},  # 56 characters
            {"role": "user", "content": [
                {"type": "text", "text": "Translate this menu into English, please."},  # 41
                {"type": "image_url", "image_url": {"url": "https://example.test/menu.png"}},
            ]},
        ],
        "tools": [],
        "max_tokens": 300,
        "residency": "eu-hosted",
        "routing": {"session_affinity": False},
        "metadata": {"team": "menus"},
    }  # fmt: skip
    # when
    request = resolve(body, {"X-Session-Id": "sess-1"}, CATALOG, workspace_mode="price")
    # then
    assert request == RoutingRequest(
        requested_model="groq:llama-3.3-70b:fast", model="meta/llama-3.3-70b", auto=False,
        fallbacks=("mistral/mistral-small",), pinned_provider="groq", mode=Mode.LATENCY,
        mode_source="suffix", provider=ProviderPrefs(), residency="eu-hosted",
        session_id="sess-1", session_affinity=False, metadata={"team": "menus"},
        operation="chat", task="translation", task_source="classifier", language="en",
        language_source="detected", has_image=True, has_tools=False,
        input_tokens=math.ceil(97 / 4) + 2 * 4 + 765, output_tokens=300,
    )  # fmt: skip


def test_d_14_request_task_and_language_beat_the_classifiers():
    request = chat(model="gpt-4o", routing={"task": "cheap", "language": "pt"},
                   messages=[{"role": "user", "content": "Fix this: ```x = 1```"}])  # fmt: skip
    assert (request.task, request.task_source) == ("cheap", "request")
    assert (request.language, request.language_source) == ("pt", "request")


def test_d_14_classifier_and_detector_fill_task_and_language():
    text = "Kannst du mir bitte Schritt für Schritt erklären, warum der Himmel blau ist?"
    request = chat(model="gpt-4o", messages=[{"role": "user", "content": text}])
    assert (request.task, request.task_source) == ("reasoning", "classifier")
    assert (request.language, request.language_source) == ("de", "detected")


@pytest.mark.parametrize(
    ("fields", "expected"),
    [({"max_completion_tokens": 50, "max_tokens": 90}, 50), ({"max_tokens": 90}, 90),
     ({"max_output_tokens": 70}, 70), ({}, 0), ({"max_tokens": True}, 0)],
)  # fmt: skip
def test_r_dec_2_output_tokens_come_from_the_request(fields, expected):
    assert chat(model="gpt-4o", **fields).output_tokens == expected


@pytest.mark.parametrize(
    ("body", "has_image", "has_tools"),
    [({"messages": HELLO}, False, False),
     ({"messages": HELLO, "tools": [{"type": "function", "function": {"name": "f"}}]}, False,
      True),
     ({"messages": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]},
      True, False)],
)  # fmt: skip
def test_r_dec_2_image_and_tool_facts(body, has_image, has_tools):
    request = resolve({"model": "gpt-4o", **body}, {}, CATALOG)
    assert (request.has_image, request.has_tools) == (has_image, has_tools)


@pytest.mark.parametrize(
    ("headers", "body_session", "expected"),
    [({"X-Session-Id": "h1"}, "b1", "h1"),  # SPEC R-EXE-7: headers first
     ({"x-session-id": "h1"}, None, "h1"),  # case-insensitive, even in a plain dict
     ({"Session-Id": "h2"}, "b1", "h2"),
     ({"X-Session-Id": "h1", "Session-Id": "h2"}, None, "h1"),
     ({"X-Session-Id": "  "}, "b1", "b1"),  # a blank header is no session id
     ({}, " b1 ", "b1"),
     ({}, None, None)],
)  # fmt: skip
def test_r_exe_7_session_id_from_headers_then_body(headers, body_session, expected):
    body = {"model": "gpt-4o", "messages": HELLO}
    if body_session is not None:
        body["session_id"] = body_session
    assert resolve(body, headers, CATALOG).session_id == expected


def test_r_api_1_embeddings_read_only_routing_fields_and_input():
    # given: chat-only fields are ignored, even malformed ones
    body = {"model": "mistral-embed", "input": ["a" * 10, "b" * 3, [1, 2, 3, 4]],
            "routing": {"language": "fr"}, "residency": "eu-owned", "session_id": 5,
            "metadata": "x", "tools": [{"type": "function"}], "max_tokens": 10}  # fmt: skip
    # when
    request = resolve(body, {"X-Session-Id": "h1"}, CATALOG, operation="embeddings")
    # then
    assert request == RoutingRequest(
        requested_model="mistral-embed", model="mistral/mistral-embed", operation="embeddings",
        residency="eu-owned", task="general", task_source="classifier", language="fr",
        language_source="request", input_tokens=3 + 1 + 4,
    )  # fmt: skip


def test_r_api_1_unknown_operation_is_a_bug():
    with pytest.raises(ValueError, match="operation"):
        resolve({"model": "gpt-4o"}, {}, CATALOG, operation="completions")
