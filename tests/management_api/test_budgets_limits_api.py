"""Budgets and rate limits on the management API (SPEC R-MGT-1, R-LIM-1, R-LIM-2, R-KEY-1,
D-24, D-28, R-OBS-4): `budgets` shows every budget with its current period's spending as
the process's budget store holds it, the policy's `daily_budget` among them; `POST
budgets` creates or replaces one scope's budget of a period; `limits` are set one scope
at a time; a key shows and takes the budget and limits of its name. Every write is
audited and reloads the gateways; a refused request writes nothing.

The tests pin the in-process store (its counters rebuild from the ledger rows the tests
write); a live key's spending in `GET budgets` is in tests/live/admission/test_budgets_api.py."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime

import pytest
from asgiref.sync import async_to_sync

from audit.models import AdminEvent
from budgets.models import Budget, RateLimit, SpendEntry
from budgets.rules.budgets import BudgetRule, charges, counter_name, key_scope, workspace_scope
from budgets.rules.holds import Hold
from budgets.rules.limits import LimitSpec, LimitStoreUnavailable
from gateway.models import ConfigVersion
from gateway.state import admission_state
from gateway.state.db_thread import close_connections
from routing.engine.routes.periods import period_bounds
from tests.management_api.clients import client_as
from workspaces.models import ApiKey, Policy, Workspace
from workspaces.services import create_api_key

WS = "/api/v1/workspaces/acme"
BUDGETS, LIMITS, KEYS = f"{WS}/budgets", f"{WS}/limits", f"{WS}/keys"
NO_LIMITS = {"requests_per_minute": None, "tokens_per_minute": None, "concurrent": None}


@pytest.fixture
def acme(db: None) -> Workspace:
    return Workspace.objects.create(slug="acme", name="Acme")


@pytest.fixture
def memory_store(settings):
    """This process's budget store, in the process, made afresh for the test."""
    settings.ADMISSION_STORE = "memory"
    admission_state.reset()
    yield admission_state.stores().budgets
    admission_state.reset()
    close_connections()  # the store's ledger reads ran in the database thread


def events(prefix: str) -> list[tuple[str, str, dict]]:
    found = AdminEvent.objects.filter(action__startswith=prefix).order_by("id")
    return [(e.action, e.target, e.changes) for e in found]


def budgets() -> list[tuple[str, str, int, list[float]]]:
    rows = Budget.objects.order_by("key_name", "period")
    return [(b.key_name, b.period, b.limit_micros, b.alerts) for b in rows]


def limits() -> list[tuple[str, int | None, int | None, int | None]]:
    rows = RateLimit.objects.order_by("key_name")
    return [(r.key_name, r.requests_per_minute, r.tokens_per_minute, r.concurrent) for r in rows]


def config_version() -> int:
    return ConfigVersion.objects.filter(pk=1).values_list("version", flat=True).first() or 0


def iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, tz=UTC).isoformat().replace("+00:00", "Z")


# Budgets: writes ----------------------------------------------------------------------


def test_r_mgt_1_post_budgets_creates_a_budget_audits_it_and_reloads_the_gateways(
    acme, owner, django_capture_on_commit_callbacks
):
    # given
    before = config_version()
    body = {"period": "monthly", "usd": 5000, "alerts": [0.95, 0.5]}
    # when
    with django_capture_on_commit_callbacks(execute=True):
        response = owner.post(BUDGETS, body, format="json")
    # then
    assert response.status_code == 201, response.content
    budget = Budget.objects.get()
    assert response.json() == {
        "id": budget.pk, "source": "budget", "scope": "workspace", "key_name": "",
        "period": "monthly", "usd": 5000.0, "alerts": [0.5, 0.95],
    }  # fmt: skip
    assert budgets() == [("", "monthly", 5_000_000_000, [0.5, 0.95])]
    assert events("budget.") == [
        ("budget.create", "* monthly", {
            "key_name": {"before": None, "after": ""},
            "period": {"before": None, "after": "monthly"},
            "limit_micros": {"before": None, "after": 5_000_000_000},
            "alerts": {"before": None, "after": [0.5, 0.95]},
        }),
    ]  # fmt: skip
    assert config_version() > before


def test_r_lim_2_post_budgets_replaces_the_budget_of_the_same_scope_and_period(acme, owner):
    # given
    first = owner.post(BUDGETS, {"key_name": "bot", "period": "daily", "usd": 20}, format="json")
    # when
    again = owner.post(BUDGETS, {"key_name": "bot", "period": "daily", "usd": 12.345678,
                                 "alerts": [0.8]}, format="json")  # fmt: skip
    unchanged = owner.post(BUDGETS, {"key_name": "bot", "period": "daily", "usd": 12.345678,
                                     "alerts": [0.8]}, format="json")  # fmt: skip
    # then
    assert (first.status_code, again.status_code, unchanged.status_code) == (201, 200, 200)
    assert again.json()["id"] == first.json()["id"]
    assert (again.json()["scope"], again.json()["usd"]) == ("key", 12.345678)
    assert budgets() == [("bot", "daily", 12_345_678, [0.8])]
    assert [e[:2] for e in events("budget.")] == [
        ("budget.create", "bot daily"),
        ("budget.update", "bot daily"),
    ]
    assert events("budget.update")[0][2] == {
        "limit_micros": {"before": 20_000_000, "after": 12_345_678},
        "alerts": {"before": [], "after": [0.8]},
    }


@pytest.mark.parametrize(
    ("_case", "body", "message", "param"),
    [
        (
            "not an object",
            ["daily"],
            "Expected a JSON object: {key_name?, period, usd, alerts?}.",
            None,
        ),
        ("nothing", {}, "period: is required; usd: is required", "period"),
        (
            "every problem at once",
            {"period": "yearly", "usd": -1, "alerts": [0, 1.5], "alert": [0.5]},
            "alert: unknown key (did you mean 'alerts'?); period: must be one of daily, weekly, "
            "monthly (got 'yearly'); usd: must be ≥ 0; alerts[0]: must be a fraction of the "
            "budget in (0, 1], such as 0.8; alerts[1]: must be a fraction of the budget in "
            "(0, 1], such as 0.8",
            "alert",
        ),
        (
            "a fraction of a micro-dollar",
            {"period": "daily", "usd": 0.0000001},
            "usd: must have at most 6 decimal places",
            "usd",
        ),
        (
            "eleven alerts",
            {"period": "daily", "usd": 1, "alerts": [i / 20 for i in range(1, 12)]},
            "alerts: at most 10 thresholds",
            "alerts",
        ),
        ("usd as text", {"period": "daily", "usd": "5"}, "usd: must be a number", "usd"),
        (
            "a blank key name",
            {"key_name": "  ", "period": "daily", "usd": 1},
            'key_name: must not be blank; leave it out (or "") for the workspace',
            "key_name",
        ),
    ],
)
def test_r_mgt_1_an_invalid_budget_is_one_400_listing_every_problem_and_writes_nothing(
    acme, owner, _case, body, message, param
):
    # when
    response = owner.post(BUDGETS, body, format="json")
    # then
    assert response.status_code == 400, response.content
    assert response.json()["error"] == {
        "message": message, "type": "invalid_request_error", "code": "invalid_request",
        "param": param,
    }  # fmt: skip
    assert budgets() == []
    assert events("budget.") == []


def test_r_mgt_1_delete_budgets_removes_one_and_audits_it(acme, globex, owner):
    # given
    budget = Budget.objects.create(workspace=acme, period="weekly", limit_micros=7_000_000)
    theirs = Budget.objects.create(workspace=globex, period="weekly", limit_micros=1)
    # when
    deleted = owner.delete(f"{BUDGETS}/{budget.pk}")
    again = owner.delete(f"{BUDGETS}/{budget.pk}")
    other = owner.delete(f"{BUDGETS}/{theirs.pk}")
    # then
    assert deleted.status_code == 204
    assert (again.status_code, again.json()["error"]["code"]) == (404, "budget_not_found")
    assert (other.status_code, other.json()["error"]["code"]) == (404, "budget_not_found")
    assert list(Budget.objects.values_list("workspace__slug", flat=True)) == ["globex"]
    assert events("budget.") == [
        ("budget.delete", "* weekly", {
            "key_name": {"before": "", "after": None},
            "period": {"before": "weekly", "after": None},
            "limit_micros": {"before": 7_000_000, "after": None},
            "alerts": {"before": [], "after": None},
        }),
    ]  # fmt: skip


# Budgets: their spending --------------------------------------------------------------


def spend(workspace: Workspace, scope: str, period: str, cost_micros: int, now: float) -> None:
    """A settled request in the ledger, which the store rebuilds its counters from."""
    SpendEntry.objects.create(
        request_id=uuid.uuid4().hex, counter=counter_name(scope, period, now),
        workspace_id=workspace.pk, cost_micros=cost_micros,
    )  # fmt: skip


@pytest.mark.django_db(transaction=True)
def test_r_lim_2_get_budgets_shows_every_budget_with_its_current_period(memory_store):
    # given a workspace budget, the policy's daily_budget on the same counter, a key's
    acme = Workspace.objects.create(slug="acme", name="Acme")
    owner = client_as(acme, "viewer")
    Policy.objects.create(workspace=acme, daily_budget_micros=50_000_000)
    Budget.objects.create(workspace=acme, period="monthly", limit_micros=5_000_000_000,
                          alerts=[0.5, 0.8])  # fmt: skip
    Budget.objects.create(workspace=acme, period="daily", limit_micros=10_000_000)
    Budget.objects.create(workspace=acme, key_name="bot", period="daily", limit_micros=2_000_000)
    now = time.time()
    workspace, key = workspace_scope(acme.pk), key_scope(acme.pk, "bot")
    spend(acme, workspace, "daily", 1_250_000, now)
    spend(acme, workspace, "daily", 250_000, now)
    spend(acme, key, "daily", 1_500_000, now)
    # and a request in flight on the key's counter and the workspace's daily one
    rules = [BudgetRule(key, "daily", 2_000_000), BudgetRule(workspace, "daily", 10_000_000)]
    hold = Hold("in-flight", acme.pk, charges(rules, now), 400_000, now + 60)
    assert async_to_sync(memory_store.reserve)(hold).admitted
    # when
    response = owner.get(BUDGETS)
    # then
    assert response.status_code == 200, response.content
    day, month = period_bounds("daily", now), period_bounds("monthly", now)
    daily = {"period": "daily", "alerts": [], "period_start": iso(day[0]),
             "resets_at": iso(day[1])}  # fmt: skip
    workspace_daily = {
        **daily,
        "scope": "workspace",
        "key_name": "",
        "spent_usd": 1.5,
        "reserved_usd": 0.4,
        "requests": 3,
    }  # fmt: skip (in flight counts)
    assert response.json() == [
        {**workspace_daily, "id": Budget.objects.get(key_name="", period="daily").pk,
         "source": "budget", "usd": 10.0, "remaining_usd": 8.1},
        {**workspace_daily, "id": None, "source": "policy", "usd": 50.0, "remaining_usd": 48.1},
        {"id": Budget.objects.get(period="monthly").pk, "source": "budget",
         "scope": "workspace", "key_name": "", "period": "monthly", "usd": 5000.0,
         "alerts": [0.5, 0.8], "spent_usd": 0.0, "reserved_usd": 0.0, "remaining_usd": 5000.0,
         "requests": 0, "period_start": iso(month[0]), "resets_at": iso(month[1])},
        {**daily, "id": Budget.objects.get(key_name="bot").pk, "source": "budget",
         "scope": "key", "key_name": "bot", "usd": 2.0, "spent_usd": 1.5, "reserved_usd": 0.4,
         "remaining_usd": 0.1, "requests": 2},
    ]  # fmt: skip


@pytest.mark.django_db(transaction=True)
def test_r_lim_2_remaining_is_never_below_zero(memory_store):
    # given spending past the cap (an input estimate below the upstream's count)
    acme = Workspace.objects.create(slug="acme", name="Acme")
    Budget.objects.create(workspace=acme, period="daily", limit_micros=1_000_000)
    spend(acme, workspace_scope(acme.pk), "daily", 1_200_000, time.time())
    # when
    body = client_as(acme, "member").get(BUDGETS).json()
    # then
    assert [(b["spent_usd"], b["remaining_usd"]) for b in body] == [(1.2, 0.0)]


def test_r_lim_2_a_store_that_cannot_answer_is_a_503_never_zeros(acme, owner, settings):
    # given a budget, and a Redis store nobody listens for
    Budget.objects.create(workspace=acme, period="daily", limit_micros=1_000_000)
    settings.ADMISSION_STORE, settings.REDIS_URL = "redis", "redis://127.0.0.1:9/0"
    admission_state.reset()
    try:
        # when
        response = owner.get(BUDGETS)
    finally:
        admission_state.reset()
    # then
    assert response.status_code == 503
    assert response["Retry-After"] == "1"
    assert response.json()["error"]["code"] == "budget_store_unavailable"


def test_r_lim_2_a_workspace_without_budgets_never_reads_the_store(acme, owner, settings):
    # given a store that could not answer
    settings.ADMISSION_STORE, settings.REDIS_URL = "redis", "redis://127.0.0.1:9/0"
    admission_state.reset()
    try:
        # when
        response = owner.get(BUDGETS)
    finally:
        admission_state.reset()
    # then
    assert (response.status_code, response.json()) == (200, [])


# Rate limits --------------------------------------------------------------------------


def idle(limit: int) -> dict[str, float]:
    return {"used": 0.0, "remaining": float(limit), "reset_s": 0.0}


def test_r_lim_1_put_limits_sets_one_scope_at_a_time_and_get_lists_them(
    acme, globex, owner, memory_store, django_capture_on_commit_callbacks
):
    # given
    RateLimit.objects.create(workspace=globex, requests_per_minute=1)
    before = config_version()
    body = {"requests_per_minute": 6000, "tokens_per_minute": 2_000_000, "concurrent": 200}
    # when
    with django_capture_on_commit_callbacks(execute=True):
        workspace = owner.put(LIMITS, body, format="json")
        key = owner.put(LIMITS, {"key_name": "bot", "requests_per_minute": 600}, format="json")
    listed = client_as(acme, "viewer").get(LIMITS)
    # then
    assert workspace.json() == {"scope": "workspace", "key_name": "", **body}
    assert key.json() == {**NO_LIMITS, "scope": "key", "key_name": "bot",
                          "requests_per_minute": 600}  # fmt: skip
    assert listed.json() == [
        {**workspace.json(), "in_use": {"requests": idle(6000), "tokens": idle(2_000_000),
                                        "concurrent": idle(200)}},
        {**key.json(), "in_use": {"requests": idle(600)}},
    ]  # fmt: skip
    assert [e[:2] for e in events("rate_limit.")] == [
        ("rate_limit.create", "*"),
        ("rate_limit.create", "bot"),
    ]
    assert events("rate_limit.")[1][2] == {"requests_per_minute": {"before": None, "after": 600}}
    assert config_version() > before


def test_r_lim_1_get_limits_shows_what_each_has_in_use_or_null_when_the_store_cannot_say(
    acme, owner, memory_store, monkeypatch
):
    # given a key limit with one request in flight holding 300 tokens
    RateLimit.objects.create(workspace=acme, key_name="bot", tokens_per_minute=600, concurrent=2)
    spec = LimitSpec(key_scope(acme.pk, "bot"), tokens_per_minute=600, concurrent=2)
    limits = admission_state.stores().limits
    now = time.time()
    assert async_to_sync(limits.acquire)([spec], tokens=300, lease="r1", now=now).admitted
    # when
    shown = owner.get(LIMITS).json()[0]["in_use"]
    # then
    assert 290 < shown["tokens"]["used"] <= 300
    assert shown["tokens"]["remaining"] == 600 - shown["tokens"]["used"]
    assert 29 < shown["tokens"]["reset_s"] <= 30
    assert shown["concurrent"] == {"used": 1.0, "remaining": 1.0, "reset_s": 0.0}

    # and a store that cannot answer leaves the limits readable, their use null
    async def unreachable(*args: object, **kwargs: object) -> None:
        raise LimitStoreUnavailable("rate-limit store unreachable")

    monkeypatch.setattr(limits, "usage", unreachable)
    answer = owner.get(LIMITS)
    assert (answer.status_code, answer.json()[0]["in_use"]) == (200, None)


def test_r_lim_1_put_replaces_the_scope_whole_and_all_null_removes_it(acme, owner):
    # given
    RateLimit.objects.create(workspace=acme, key_name="bot", requests_per_minute=60, concurrent=5)
    # when
    replaced = owner.put(LIMITS, {"key_name": "bot", "concurrent": 5}, format="json")
    removed = owner.put(LIMITS, {"key_name": "bot", "concurrent": None}, format="json")
    # then
    assert replaced.json() == {**NO_LIMITS, "scope": "key", "key_name": "bot", "concurrent": 5}
    assert removed.json() == {**NO_LIMITS, "scope": "key", "key_name": "bot"}
    assert limits() == []
    assert owner.get(LIMITS).json() == []
    assert events("rate_limit.") == [
        ("rate_limit.update", "bot", {"requests_per_minute": {"before": 60, "after": None}}),
        ("rate_limit.delete", "bot", {"concurrent": {"before": 5, "after": None}}),
    ]


def test_r_lim_1_invalid_limits_are_one_400_and_change_nothing(acme, owner):
    # given
    RateLimit.objects.create(workspace=acme, requests_per_minute=60)
    body = {"requests_per_minute": 0, "tokens_per_minute": "many", "concurrent": 1.5, "burst": 2}
    # when
    response = owner.put(LIMITS, body, format="json")
    # then
    assert response.status_code == 400
    assert response.json()["error"]["message"] == (
        "burst: unknown key; requests_per_minute: must be ≥ 1; tokens_per_minute: must be an "
        "integer; concurrent: must be an integer"
    )
    assert limits() == [("", 60, None, None)]
    assert events("rate_limit.") == []


# Roles and tenancy --------------------------------------------------------------------

WRITES = [
    ("post", BUDGETS, {"period": "daily", "usd": 1}),
    ("put", LIMITS, {"concurrent": 3}),
    ("delete", f"{BUDGETS}/{{budget}}", None),
]


@pytest.mark.parametrize("role", ["member", "viewer"])
@pytest.mark.parametrize(("method", "path", "body"), WRITES)
def test_r_mgt_1_members_and_viewers_read_but_do_not_edit(acme, role, method, path, body):
    # given
    budget = Budget.objects.create(workspace=acme, key_name="bot", period="weekly",
                                   limit_micros=1)  # fmt: skip
    api = client_as(acme, role)
    # when
    response = getattr(api, method)(path.format(budget=budget.pk), body, format="json")
    # then
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"
    assert budgets() == [("bot", "weekly", 1, [])]
    assert limits() == []
    assert api.get(LIMITS).status_code == 200


@pytest.mark.parametrize(("method", "path", "body"), WRITES)
def test_r_mgt_1_an_admin_edits(acme, method, path, body):
    # given
    budget = Budget.objects.create(workspace=acme, key_name="bot", period="weekly",
                                   limit_micros=1)  # fmt: skip
    # when
    response = getattr(client_as(acme, "admin"), method)(
        path.format(budget=budget.pk), body, format="json"
    )
    # then
    assert response.status_code in (200, 201, 204)


@pytest.mark.parametrize(
    ("method", "path", "body"), [("get", BUDGETS, None), ("get", LIMITS, None), *WRITES]
)
def test_r_mgt_1_a_token_of_another_workspace_gets_404(acme, globex, method, path, body):
    # given
    budget = Budget.objects.create(workspace=acme, period="weekly", limit_micros=1)
    outsider = client_as(globex, "owner")
    # when
    response = getattr(outsider, method)(path.format(budget=budget.pk), body, format="json")
    # then
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "workspace_not_found"
    assert budgets() == [("", "weekly", 1, [])]
    assert limits() == []


# A key's budget and limits ------------------------------------------------------------


def key_named(workspace: Workspace, name: str) -> ApiKey:
    return create_api_key(workspace, name=name, actor="test").api_key


def test_r_key_1_a_key_shows_the_budget_and_limits_of_its_name(acme, owner):
    # given: two budgets of the name (the budgets resource allows one per period)
    bot = key_named(acme, "bot")
    key_named(acme, "plain")
    Budget.objects.create(workspace=acme, key_name="bot", period="monthly", limit_micros=90)
    Budget.objects.create(workspace=acme, key_name="bot", period="daily",
                          limit_micros=20_000_000, alerts=[0.8])  # fmt: skip
    RateLimit.objects.create(workspace=acme, key_name="bot", requests_per_minute=600,
                             concurrent=50)  # fmt: skip
    Budget.objects.create(workspace=acme, period="daily", limit_micros=1)  # the workspace's
    # when
    shown = {k["name"]: (k["budget"], k["limits"]) for k in owner.get(KEYS).json()}
    one = owner.get(f"{KEYS}/{bot.lookup_id}").json()
    # then: the first by period, as `export` writes the key's one `budget:`
    assert shown == {
        "bot": ({"period": "daily", "usd": 20.0, "alerts": [0.8]},
                {**NO_LIMITS, "requests_per_minute": 600, "concurrent": 50}),
        "plain": (None, None),
    }  # fmt: skip
    assert (one["budget"], one["limits"]) == shown["bot"]


def test_r_key_1_create_takes_the_budget_and_limits_of_the_new_keys_name(acme, owner):
    # given
    body = {"name": "bot", "budget": {"period": "daily", "usd": 20, "alerts": [0.8]},
            "limits": {"requests_per_minute": 600}}  # fmt: skip
    # when
    response = owner.post(KEYS, body, format="json")
    # then
    assert response.status_code == 201, response.content
    assert (response.json()["budget"], response.json()["limits"]) == (
        {"period": "daily", "usd": 20.0, "alerts": [0.8]},
        {**NO_LIMITS, "requests_per_minute": 600},
    )
    assert budgets() == [("bot", "daily", 20_000_000, [0.8])]
    assert limits() == [("bot", 600, None, None)]
    assert [e[:2] for e in events("budget.") + events("rate_limit.")] == [
        ("budget.create", "bot daily"),
        ("rate_limit.create", "bot"),
    ]


def test_r_key_1_patch_replaces_the_names_budgets_and_null_removes_them(acme, owner):
    # given
    key = key_named(acme, "bot")
    for period in ("daily", "monthly"):
        Budget.objects.create(workspace=acme, key_name="bot", period=period, limit_micros=1)
    RateLimit.objects.create(workspace=acme, key_name="bot", concurrent=5)
    # when
    weekly = owner.patch(f"{KEYS}/{key.lookup_id}",
                         {"budget": {"period": "weekly", "usd": 7}}, format="json")  # fmt: skip
    kept = budgets()
    cleared = owner.patch(f"{KEYS}/{key.lookup_id}", {"budget": None, "limits": None},
                          format="json")  # fmt: skip
    # then
    assert weekly.json()["budget"] == {"period": "weekly", "usd": 7.0, "alerts": []}
    assert kept == [("bot", "weekly", 7_000_000, [])]
    assert (cleared.json()["budget"], cleared.json()["limits"]) == (None, None)
    assert (budgets(), limits()) == ([], [])
    assert [e[:2] for e in events("budget.") + events("rate_limit.")] == [
        ("budget.delete", "bot daily"),
        ("budget.delete", "bot monthly"),
        ("budget.create", "bot weekly"),
        ("budget.delete", "bot weekly"),
        ("rate_limit.delete", "bot"),
    ]


def test_r_key_1_an_invalid_budget_or_limit_of_a_key_is_a_400_with_its_path(acme, owner):
    # given
    key = key_named(acme, "bot")
    body = {"name": "renamed", "budget": {"period": "hourly", "usd": 1},
            "limits": {"concurrent": 0}}  # fmt: skip
    # when
    patched = owner.patch(f"{KEYS}/{key.lookup_id}", body, format="json")
    created = owner.post(KEYS, {"name": "new", "budget": {"usd": 1}}, format="json")
    # then
    assert patched.status_code == 400
    assert patched.json()["error"]["message"] == (
        "budget.period: must be one of daily, weekly, monthly (got 'hourly'); "
        "limits.concurrent: must be ≥ 1"
    )
    assert created.json()["error"]["message"] == "budget.period: is required"
    assert list(ApiKey.objects.values_list("name", flat=True)) == ["bot"]
    assert (budgets(), limits()) == ([], [])


def test_r_key_1_a_rename_carries_the_budget_and_limits_to_the_new_name(acme, owner):
    # given
    key = key_named(acme, "bot")
    Budget.objects.create(workspace=acme, key_name="bot", period="daily", limit_micros=1)
    RateLimit.objects.create(workspace=acme, key_name="bot", concurrent=5)
    # when
    response = owner.patch(f"{KEYS}/{key.lookup_id}", {"name": "bot-2"}, format="json")
    # then
    assert response.status_code == 200
    assert response.json()["budget"] == {"period": "daily", "usd": 0.000001, "alerts": []}
    assert (budgets(), limits()) == ([("bot-2", "daily", 1, [])], [("bot-2", None, None, 5)])
    assert [e[:2] for e in events("budget.") + events("rate_limit.")] == [
        ("budget.rename", "bot-2 daily"),
        ("rate_limit.rename", "bot-2"),
    ]


def test_r_key_1_a_rename_onto_a_name_with_budgets_of_its_own_is_refused(acme, owner):
    # given
    key = key_named(acme, "bot")
    Budget.objects.create(workspace=acme, key_name="bot", period="daily", limit_micros=1)
    Budget.objects.create(workspace=acme, key_name="taken", period="daily", limit_micros=2)
    # when
    response = owner.patch(f"{KEYS}/{key.lookup_id}", {"name": "taken"}, format="json")
    # then
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "settings_name_taken"
    assert ApiKey.objects.get().name == "bot"
    assert budgets() == [("bot", "daily", 1, []), ("taken", "daily", 2, [])]
    assert events("budget.") == []
    assert events("api_key.update") == []
