"""Properties of `decide` over generated catalogs, requests and policies (SPEC R-DEC-1,
R-DEC-2, R-DEC-4, R-DEC-7, R-BEY-5)."""

import random
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from routing.engine.decide import decide
from routing.engine.filters import active_checks, first_failing, first_rejection
from routing.engine.policy import effective_policy
from routing.engine.types import (
    EndpointInfo,
    EndpointStats,
    LatencyTarget,
    LiveState,
    Mode,
    PolicyView,
    ProviderPrefs,
    RoutingRequest,
)
from tests.properties import examples
from tests.routing.builders import NOW, make_request

PROVIDERS = ("prov-a", "prov-b", "prov-c", "prov-d")
MODELS = ("meta/llama-3.3-70b", "mistral/codestral-2501", "acme/tiny-8b")
REGIONS = ("eu-west-1", "eu-central-1", "us-east-1")
CLASSES = ("eu-owned", "eu-hosted", "any")
STATUSES = ("active", "degraded", "disabled", "catalog_only")
CAPABILITIES = ("text", "vision", "tools", "embedding")
LANGUAGES = ("de", "en", "fr", "it", "es", "pt", "pl")
TASKS = ("general", "cheap", "code", "retrieval", "multilingual", "tool_use")
FAST = settings(max_examples=examples(100), deadline=None)

MAX_CONSTRAINTS = 3  # each constraint rejects a lot: with many at once nothing survives


def _subset(values):
    return st.frozensets(st.sampled_from(values), max_size=len(values))


def _rarely(strategy, default):
    """`default` three times in four."""
    return st.sampled_from((0, 1, 2, 3)).flatmap(lambda i: strategy if i == 3 else st.just(default))


def _some_of(fields):
    """A few of `fields` (name → strategy), drawn; the others keep their defaults."""
    names = st.sets(st.sampled_from(sorted(fields)), max_size=MAX_CONSTRAINTS)
    return names.flatmap(
        lambda chosen: st.fixed_dictionaries({name: fields[name] for name in chosen})
    )


prices = st.floats(min_value=0.0, max_value=30.0)
millis = st.none() | st.floats(min_value=1.0, max_value=5000.0)


@st.composite
def endpoint(draw, endpoint_id: str) -> EndpointInfo:
    return EndpointInfo(
        id=endpoint_id,
        provider=draw(st.sampled_from(PROVIDERS)),
        model=draw(st.sampled_from(MODELS)),
        upstream_model="upstream",
        region=draw(st.sampled_from(REGIONS)),
        status=draw(_rarely(st.sampled_from(STATUSES), "active")),
        sovereignty_class=draw(st.sampled_from(CLASSES)),
        partner=draw(_rarely(st.just(True), False)),
        price_input=draw(prices),
        price_output=draw(prices),
        capabilities=draw(_rarely(_subset(CAPABILITIES), frozenset({"text", "tools"}))),
        context_window=draw(st.integers(min_value=1000, max_value=200_000)),
        parameters_b=draw(st.none() | st.floats(min_value=1.0, max_value=1000.0)),
        strong_languages=draw(_subset(LANGUAGES)),
        task_tags=draw(_subset(("code", "rag", "tool_use", "reasoning"))),
        documentation_completeness=draw(st.floats(min_value=0.0, max_value=1.0)),
    )


catalogs = st.integers(min_value=1, max_value=8).flatmap(
    lambda n: st.tuples(*(endpoint(f"ep-{i}") for i in range(n)))
)

policies = _some_of({
    "allowed_residency": _subset(CLASSES), "allowed_regions": _subset(REGIONS),
    "provider_allow": _subset(PROVIDERS), "provider_deny": _subset(PROVIDERS),
    "model_allow": _subset(MODELS), "model_deny": _subset(MODELS), "partners": st.booleans(),
    "max_price_prompt": prices, "max_price_completion": prices,
}).map(lambda fields: PolicyView(**fields))  # fmt: skip

# Request fields that only narrow (`ProviderPrefs` ones prefixed "provider.").
NARROWING = {
    "pinned_provider": st.sampled_from(PROVIDERS), "residency": st.sampled_from(CLASSES),
    "has_image": st.booleans(), "input_tokens": st.integers(0, 150_000),
    "output_tokens": st.integers(0, 8000), "provider.allow_fallbacks": st.booleans(),
    "provider.only": _subset(PROVIDERS), "provider.ignore": _subset(PROVIDERS),
    "provider.max_price_prompt": prices, "provider.max_price_completion": prices,
    "provider.regions": _subset(REGIONS),
}  # fmt: skip


@st.composite
def requests(draw) -> RoutingRequest:
    narrowing = draw(_some_of(NARROWING))
    prefs = {
        name.removeprefix("provider."): value
        for name, value in narrowing.items()
        if name.startswith("provider.")
    }
    top = {name: value for name, value in narrowing.items() if not name.startswith("provider.")}
    provider = ProviderPrefs(
        order=tuple(draw(st.lists(st.sampled_from(PROVIDERS), max_size=3, unique=True))),
        preferred_min_throughput=draw(_rarely(st.floats(1.0, 200.0), None)),
        preferred_max_latency=draw(_rarely(st.builds(LatencyTarget, millis, millis, millis), None)),
        **prefs,
    )
    return RoutingRequest(
        requested_model="some-model",
        model=draw(st.sampled_from(MODELS)),
        auto=draw(st.booleans()),
        mode=draw(st.sampled_from(Mode)),
        provider=provider,
        task=draw(st.sampled_from(TASKS)),
        language=draw(st.none() | st.sampled_from(LANGUAGES)),
        **top,
    )


stats = st.builds(
    EndpointStats,
    latency_p50_ms=millis,
    latency_p90_ms=millis,
    latency_p99_ms=millis,
    throughput_tps=st.none() | st.floats(min_value=0.0, max_value=300.0),
    error_rate=st.none() | st.floats(min_value=0.0, max_value=1.0),
)


@st.composite
def live_states(draw, endpoint_ids=tuple(f"ep-{i}" for i in range(8))) -> LiveState:
    measured = draw(_subset(endpoint_ids))
    return LiveState(
        stats={eid: draw(stats) for eid in sorted(measured)},
        unhealthy=draw(_subset(endpoint_ids)),
    )


def _decide(endpoints, request, policy, live, seed):
    return decide(endpoints, request, policy, live, random.Random(seed), NOW)


def _survivors(decision) -> set[str]:
    return {e.id for e in decision.ordered}


@FAST
@given(catalogs, requests(), policies, live_states(), st.integers(0, 2**32))
def test_r_bey_5_every_attempt_passes_the_filter(endpoints, request, policy, live, seed):
    # when
    decision = _decide(endpoints, request, policy, live, seed)
    # then
    for attempt in decision.ordered:
        assert first_rejection(attempt, request, policy) is None
    rejected = {endpoint_id for endpoint_id, _reason in decision.rejected}
    assert not rejected & _survivors(decision)
    assert rejected | _survivors(decision) == {e.id for e in endpoints}
    assert [s.endpoint_id for s in decision.scored] == [e.id for e in decision.ordered]


@FAST
@given(catalogs, requests(), policies, live_states(), st.integers(0, 2**32))
def test_r_dec_4_request_constraints_never_add_a_survivor(endpoints, request, policy, live, seed):
    # given the same request without any of its narrowing constraints
    unconstrained = replace(
        request,
        residency=None,
        provider=ProviderPrefs(),
        pinned_provider=None,
        has_image=False,
        input_tokens=0,
        output_tokens=0,
    )
    # when
    narrowed = _decide(endpoints, request, policy, live, seed)
    wide = _decide(endpoints, unconstrained, policy, live, seed)
    # then
    assert _survivors(narrowed) <= _survivors(wide)


@FAST
@given(catalogs, requests(), policies)
def test_r_dec_2_skipping_checks_that_cannot_fail_changes_no_reason(endpoints, request, policy):
    # given
    effective, _notes = effective_policy(policy, request)
    # when
    active = active_checks(request, effective)
    # then
    for endpoint in endpoints:
        assert first_failing(endpoint, request, effective, active) == first_failing(
            endpoint, request, effective
        )


def _admits(allowed: frozenset[str], value: str) -> bool:
    return not allowed or value in allowed


def _within(cap: float | None, limit: float | None) -> bool:
    return limit is None or (cap is not None and cap <= limit)


@FAST
@given(
    st.builds(
        PolicyView,
        allowed_residency=_subset(CLASSES),
        allowed_regions=_subset(REGIONS),
        max_price_prompt=st.none() | prices,
        max_price_completion=st.none() | prices,
    ),
    st.none() | st.sampled_from((*CLASSES, "mars")),
    _subset(REGIONS),
    st.none() | prices,
    st.none() | prices,
)
def test_r_dec_4_the_effective_policy_admits_nothing_the_policy_does_not(
    policy, residency, regions, prompt_cap, completion_cap
):
    # given
    request = replace(
        make_request(residency=residency),
        provider=ProviderPrefs(
            regions=regions, max_price_prompt=prompt_cap, max_price_completion=completion_cap
        ),
    )
    # when
    effective, _notes = effective_policy(policy, request)
    # then
    for value in CLASSES:
        assert _admits(policy.allowed_residency, value) or not _admits(
            effective.allowed_residency, value
        )
    for value in REGIONS:
        assert _admits(policy.allowed_regions, value) or not _admits(
            effective.allowed_regions, value
        )
    assert _within(effective.max_price_prompt, policy.max_price_prompt)
    assert _within(effective.max_price_completion, policy.max_price_completion)
    assert effective_policy(effective, request)[0] == effective


@FAST
@given(catalogs, requests(), policies, live_states(), st.integers(0, 2**32))
def test_r_dec_1_a_fixed_seed_decides_the_same_way(endpoints, request, policy, live, seed):
    assert _decide(endpoints, request, policy, live, seed) == _decide(
        endpoints, request, policy, live, seed
    )


@FAST
@given(
    catalogs,
    requests(),
    policies,
    live_states(),
    st.integers(0, 2**32),
    endpoint("ep-x"),
    st.integers(min_value=0, max_value=8),
)
def test_r_dec_2_adding_a_rejected_endpoint_never_changes_the_route(
    endpoints, request, policy, live, seed, extra, position
):
    # given an endpoint the filter rejects
    if first_rejection(extra, request, policy) is None:
        extra = replace(extra, status="disabled")
    with_extra = (*endpoints[:position], extra, *endpoints[position:])
    # when
    before = _decide(endpoints, request, policy, live, seed)
    after = _decide(with_extra, request, policy, live, seed)
    # then
    assert after.ordered == before.ordered
    assert after.scored == before.scored


@FAST
@given(catalogs, requests(), policies, live_states(), st.integers(0, 2**32))
def test_r_dec_7_unhealthy_endpoints_come_after_every_healthy_one(
    endpoints, request, policy, live, seed
):
    # when
    decision = _decide(endpoints, request, policy, live, seed)
    # then
    flags = [e.id in live.unhealthy for e in decision.ordered]
    assert flags == sorted(flags)
    assert all(
        (s.demoted == "unhealthy") == flag for s, flag in zip(decision.scored, flags, strict=True)
    )
