"""Budgets & limits in the console (SPEC R-LIM-1, R-LIM-2, R-POL-2, D-28, D-30, R-BEY-7):
the page shows each budget's spending as the budget store holds it after requests went
through the admission code's own store path (reserve, settle, alerts), route budget and
rate nodes with the attached key's usage, and "unavailable" — never zeros — when the store
cannot answer; an admin's edits go through the audited services, a member's or viewer's
are refused, a bad form is the management API's 400 message and writes nothing; the
Provider keys page shows a credential's cooldown.

The page's store is this process's in-process one, made afresh for each test; its
counters rebuild from the ledger, whose reads run in the gateway's database thread."""

from __future__ import annotations

import html
import re
import time
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

import pytest
from asgiref.sync import async_to_sync

from audit.models import AdminEvent
from budgets import settling
from budgets.models import Budget, BudgetAlert, RateLimit
from budgets.rules.budgets import BudgetRule, charges, key_scope
from budgets.rules.holds import Hold
from budgets.rules.limits import LimitSpec, LimitStoreUnavailable
from budgets.rules.route_usage import tracking_rules
from budgets.stores.budget_store import BudgetStore
from gateway.request_path.admit import Admission
from gateway.state import admission_state, request_state, runtime
from gateway.state.db_thread import close_connections
from gateway.state.snapshot_budgets import Governed, load_governance
from management_api.config_apply import apply_config
from presets.preset_services import set_key_settings
from presets.services import deploy_route, save_route
from routing.engine.routes.periods import period_bounds
from tests.management_api.clients import client_as
from workspaces.credential_services import CredentialRules, create_credential
from workspaces.models import Workspace

pytestmark = pytest.mark.django_db
PAGE = "/console/acme/budgets/"
SAVE, LIMITS = f"{PAGE}save", f"{PAGE}limits"


@pytest.fixture
def memory_store(settings) -> Iterator[BudgetStore]:
    """This process's budget store, in the process, made afresh for the test."""
    settings.ADMISSION_STORE = "memory"
    admission_state.reset()
    yield admission_state.stores().budgets
    admission_state.reset()
    close_connections()  # the ledger's reads ran in the database thread


def _request(
    workspace: Workspace, key_name: str, worst_micros: int, cost_micros: int | None,
    extra_rules: Sequence[BudgetRule] = (),
) -> None:  # fmt: skip
    """One request of the key `key_name` through the admission code's store path: its
    worst case reserved on every budget the snapshot gives the workspace and the key (and
    `extra_rules`, as a route's walk adds), then, unless it is still in flight
    (`cost_micros` None), settled to its cost — alert thresholds fire as for any request."""
    governed = load_governance()
    rules = (*governed.get((workspace.pk, ""), Governed()).budgets,
             *governed.get((workspace.pk, key_name), Governed()).budgets, *extra_rules)  # fmt: skip
    now, request_id = time.time(), uuid.uuid4().hex
    hold = Hold(request_id, workspace.pk, charges(rules, now), worst_micros, now + 60)

    async def run() -> None:
        stores = admission_state.stores()
        taken = await stores.admitter.take((), 0, request_id, hold, now)
        assert taken.budget is not None
        assert taken.budget.admitted
        if cost_micros is not None:
            Admission(stores, hold=hold, lease=request_id).settle(cost_micros, 0, now)
            await settling.drain()

    async_to_sync(run)()


def _rows(page: str, table: str) -> list[str]:
    """The text of each body row of `<table class="{table}">`, tags out, spaces collapsed."""
    found = re.search(rf'<table class="{table}">.*?<tbody>(.*?)</tbody>', page, re.S)
    assert found is not None, table
    rows = re.findall(r"<tr>(.*?)</tr>", found.group(1), re.S)
    return [" ".join(html.unescape(re.sub(r"<[^>]+>", " ", row)).split()) for row in rows]


def _problems(page: str) -> list[str]:
    found = re.search(r'<ul class="problem" role="alert">(.*?)</ul>', page, re.S)
    assert found is not None
    return [html.unescape(p) for p in re.findall(r"<li>(.*?)</li>", found.group(1), re.S)]


def _minutes(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, tz=UTC).strftime("%Y-%m-%d %H:%M")


def _written() -> tuple[int, int, int]:
    return Budget.objects.count(), RateLimit.objects.count(), AdminEvent.objects.count()


@pytest.mark.django_db(transaction=True)
def test_r_lim_2_the_page_shows_spent_reserved_remaining_reset_and_fired_alerts(
    memory_store, people, acme
):
    # given a workspace budget, a key's, and the policy's daily_budget (D-28)
    Budget.objects.create(workspace=acme, period="daily", limit_micros=10_000_000,
                          alerts=[0.1, 0.5])  # fmt: skip
    Budget.objects.create(workspace=acme, key_name="bot", period="daily",
                          limit_micros=2_000_000, alerts=[0.8])  # fmt: skip
    apply_config({"workspaces": [{"slug": "acme", "name": "Acme",
                                  "policy": {"daily_budget": 50}}]}, actor="test")  # fmt: skip
    # and one request of `bot` settled at $1.50 (past the workspace's 10 %), one in flight
    _request(acme, "bot", worst_micros=2_000_000, cost_micros=1_500_000)
    _request(acme, "bot", worst_micros=400_000, cost_micros=None)
    # when a viewer opens the page
    response = people["viewer"].get(PAGE)
    # then
    assert response.status_code == 200
    page = response.content.decode()
    start, end = period_bounds("daily", time.time())
    period = f"{_minutes(start)} → {_minutes(end)}"
    fired = BudgetAlert.objects.get().at.strftime("%Y-%m-%d %H:%M:%S")
    assert _rows(page, "budgets") == [
        f"workspace daily $10.00 $1.50 $0.40 $8.10 19 % {period} 10 %: fired {fired} 50 %: not yet",
        f"workspace policy daily_budget daily $50.00 $1.50 $0.40 $48.10 4 % {period} —",
        f"key bot daily $2.00 $1.50 $0.40 $0.10 95 % {period} 80 %: not yet",
    ]
    assert 'class="seg f0 w15"></span><span class="seg f2 w5"' in page  # 15 % + 4 %
    assert 'class="seg f0 w75"></span><span class="seg f2 w20"' in page  # 75 % + 20 %
    assert "Spending unavailable" not in page
    assert "Set a budget" not in page
    assert "Delete" not in page


@pytest.mark.django_db(transaction=True)
def test_r_lim_2_route_budget_and_rate_nodes_show_the_attached_key_s_usage(
    memory_store, people, acme
):
    # given route `support` deployed: a $1 daily budget node, then 100 requests an hour
    content = {"slug": "support", "start": "cap", "nodes": {
        "cap": {"type": "budget", "period": "daily", "usd": 1, "within": "pace",
                "exceeded": "no"},
        "pace": {"type": "rate_limit", "period": "hour", "requests": 100, "within": "pick",
                 "exceeded": "no"},
        "pick": {"type": "model", "model": "requested"},
        "no": {"type": "reject", "status": 402, "message": "Over budget."},
    }}  # fmt: skip
    deploy_route(save_route(acme, content, actor="test").route, actor="test")
    set_key_settings(acme, "bot", {"routes": ["support"]}, actor="test")
    # and two requests of `bot` that walked it `within`, one settled, one in flight
    walked = (*tracking_rules(acme.pk, "bot", ("daily", "hour")),
              BudgetRule(key_scope(acme.pk, "bot"), "daily", 1_000_000))  # fmt: skip
    _request(acme, "bot", worst_micros=300_000, cost_micros=250_000, extra_rules=walked)
    _request(acme, "bot", worst_micros=100_000, cost_micros=None, extra_rules=walked)
    # when
    page = people["member"].get(PAGE).content.decode()
    # then
    now = time.time()
    day, hour = period_bounds("daily", now), period_bounds("hour", now)
    assert _rows(page, "budgets") == [
        f"key bot route support v1 node cap daily $1.00 $0.25 $0.10 $0.65 35 % "
        f"{_minutes(day[0])} → {_minutes(day[1])} —",
    ]
    assert _rows(page, "rate-nodes") == [f"support v1 node pace hour 100 bot 2 {_minutes(hour[1])}"]


def test_r_lim_2_a_store_that_cannot_answer_is_shown_unavailable_never_zeros(
    acme, people, settings
):
    # given a budget, and a Redis store nobody listens for
    Budget.objects.create(workspace=acme, period="weekly", limit_micros=1_000_000)
    settings.ADMISSION_STORE, settings.REDIS_URL = "redis", "redis://127.0.0.1:9/0"
    admission_state.reset()
    try:
        # when
        response = people["viewer"].get(PAGE)
    finally:
        admission_state.reset()
    # then the page still answers, with the budget and no spending
    assert response.status_code == 200
    page = response.content.decode()
    start, end = period_bounds("weekly", time.time())
    assert _rows(page, "budgets") == [
        f"workspace weekly $1.00 unavailable {_minutes(start)} → {_minutes(end)} —"
    ]
    assert 'id="store-unavailable"' in page
    assert "$0.00" not in page


def test_r_lim_1_the_page_shows_each_rate_limit_with_what_is_in_use_now(memory_store, acme, people):
    # given limits slow to drain (a tenth of a request and 10 tokens a second), and two
    # requests the store admitted, one still in flight
    RateLimit.objects.create(workspace=acme, requests_per_minute=6, concurrent=20)
    RateLimit.objects.create(workspace=acme, key_name="bot", tokens_per_minute=600)
    now = time.time()
    limits = admission_state.stores().limits
    workspace = LimitSpec(f"ws:{acme.pk}", requests_per_minute=6, concurrent=20)
    bot = LimitSpec(key_scope(acme.pk, "bot"), tokens_per_minute=600)
    for lease in ("a", "b"):
        taken = async_to_sync(limits.acquire)([workspace, bot], tokens=100, lease=lease, now=now)
        assert taken.admitted
    async_to_sync(limits.release)([workspace, bot], lease="a", tokens_reserved=100,
                                  tokens_used=100, now=now)  # fmt: skip
    # when
    page = people["viewer"].get(PAGE).content.decode()
    # then each limit shows what is in use, and when its bucket is empty again
    workspace_row, bot_row = _rows(page, "limits")
    assert re.fullmatch(r"workspace 2 / 6 empty in 2\d s — 1 / 20", workspace_row), workspace_row
    found = re.fullmatch(r"key bot — (\d+) / 600 empty in (\d+) s —", bot_row)
    assert found is not None, bot_row
    assert 150 < int(found[1]) <= 200
    assert 15 <= int(found[2]) <= 20
    assert "as this gateway worker counts them" in page
    # and reading took nothing
    again = async_to_sync(limits.usage)([workspace], now=now)
    assert [(u.kind.value, u.used) for u in again] == [("requests", 2.0), ("concurrent", 1.0)]


def test_r_lim_1_a_limit_store_that_cannot_answer_shows_no_usage_never_zeros(
    memory_store, acme, people, monkeypatch
):
    RateLimit.objects.create(workspace=acme, requests_per_minute=600)

    async def unreachable(*args: object, **kwargs: object) -> None:
        raise LimitStoreUnavailable("rate-limit store unreachable: refused")

    monkeypatch.setattr(admission_state.stores().limits, "usage", unreachable)
    page = people["viewer"].get(PAGE).content.decode()
    assert _rows(page, "limits") == ["workspace 600 (usage unavailable) — —"]
    assert "Rate-limit usage unavailable" in page


def test_d_30_an_admin_sets_replaces_and_deletes_a_budget_and_sets_limits_audited(
    memory_store, acme, people
):
    admin = people["admin"]
    # when the admin sets a key's budget, then replaces it
    created = admin.post(SAVE, {"key_name": "bot", "period": "daily", "usd": "20",
                                "alerts": "0.95, 0.8"})  # fmt: skip
    replaced = admin.post(SAVE, {"key_name": "bot", "period": "daily", "usd": "12.345678",
                                 "alerts": ""})  # fmt: skip
    # then
    assert (created.status_code, replaced.status_code) == (302, 302)
    assert created["Location"] == PAGE
    budget = Budget.objects.get()
    assert (budget.key_name, budget.period, budget.limit_micros, budget.alerts) == (
        "bot", "daily", 12_345_678, [])  # fmt: skip
    events = AdminEvent.objects.filter(workspace=acme, action__startswith="budget.")
    assert [(e.action, e.target, e.actor) for e in events.order_by("id")] == [
        ("budget.create", "bot daily", "admin-acme"),
        ("budget.update", "bot daily", "admin-acme"),
    ]
    shown = admin.get(PAGE).content.decode()
    assert "The daily budget of key bot saved." in shown
    # when the admin sets the workspace's limits, then deletes the budget
    limits = admin.post(LIMITS, {"key_name": "", "requests_per_minute": "600",
                                 "tokens_per_minute": "", "concurrent": "20"})  # fmt: skip
    deleted = admin.post(f"{PAGE}{budget.pk}/delete")
    # then
    assert (limits.status_code, deleted.status_code) == (302, 302)
    row = RateLimit.objects.get(workspace=acme)
    assert (row.key_name, row.requests_per_minute, row.tokens_per_minute, row.concurrent) == (
        "", 600, None, 20)  # fmt: skip
    assert not Budget.objects.exists()
    assert list(
        AdminEvent.objects.filter(workspace=acme).order_by("id").values_list("action", "target")
    )[-2:] == [("rate_limit.create", "*"), ("budget.delete", "bot daily")]


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_d_30_members_and_viewers_see_no_edit_controls_and_their_writes_are_403(acme, people, role):
    # given
    budget = Budget.objects.create(workspace=acme, period="weekly", limit_micros=1_000_000)
    before = _written()
    browser = people[role]
    # when
    page = browser.get(PAGE).content.decode()
    answers = [
        browser.post(SAVE, {"period": "daily", "usd": "5"}).status_code,
        browser.post(LIMITS, {"concurrent": "3"}).status_code,
        browser.post(f"{PAGE}{budget.pk}/delete").status_code,
    ]
    # then
    assert answers == [403, 403, 403]
    assert _written() == before
    for control in ("Set a budget", "Set rate limits", "Delete", '<form method="post"'):
        assert control not in page, control


def test_d_30_an_outsider_gets_404_and_writes_nothing(acme, people):
    budget = Budget.objects.create(workspace=acme, period="weekly", limit_micros=1_000_000)
    before = _written()
    outsider = people["outsider"]
    assert outsider.get(PAGE).status_code == 404
    assert outsider.post(SAVE, {"period": "daily", "usd": "5"}).status_code == 404
    assert outsider.post(f"{PAGE}{budget.pk}/delete").status_code == 404
    assert _written() == before


@pytest.mark.parametrize(
    ("_case", "url", "form", "message"),
    [
        ("nothing", SAVE, {}, "period: is required; usd: is required"),
        (
            "every problem at once",
            SAVE,
            {"period": "yearly", "usd": "-1", "alerts": "0, 1.5"},
            "period: must be one of daily, weekly, monthly (got 'yearly'); usd: must be ≥ 0; "
            "alerts[0]: must be a fraction of the budget in (0, 1], such as 0.8; alerts[1]: "
            "must be a fraction of the budget in (0, 1], such as 0.8",
        ),
        ("a fraction of a micro-dollar", SAVE, {"period": "daily", "usd": "0.0000001"},
         "usd: must have at most 6 decimal places"),
        ("usd as text", SAVE, {"period": "daily", "usd": "five"}, "usd: must be a number"),
        ("a blank key name", SAVE, {"key_name": "  ", "period": "daily", "usd": "1"},
         'key_name: must not be blank; leave it out (or "") for the workspace'),
        (
            "bad limits",
            LIMITS,
            {"requests_per_minute": "0", "tokens_per_minute": "many", "concurrent": "1.5"},
            "requests_per_minute: must be ≥ 1; tokens_per_minute: must be an integer; "
            "concurrent: must be an integer",
        ),
    ],
)  # fmt: skip
def test_r_lim_2_a_bad_form_is_a_400_with_the_api_s_message_and_writes_nothing(
    acme, people, _case, url, form, message
):
    # given
    RateLimit.objects.create(workspace=acme, requests_per_minute=60)
    before = _written()
    # when
    response = people["owner"].post(url, form)
    # then
    assert response.status_code == 400
    assert _problems(response.content.decode()) == [message]
    assert _written() == before


def test_r_lim_2_the_console_s_message_is_the_management_api_s(acme, people):
    # given the same bad budget, as a form and as the API's JSON
    form = {"key_name": "bot", "period": "hourly", "usd": "1e13", "alerts": "0.5, 2"}
    body = {"key_name": "bot", "period": "hourly", "usd": 1e13, "alerts": [0.5, 2]}
    # when
    console = people["admin"].post(SAVE, form)
    api = client_as(acme, "admin").post("/api/v1/workspaces/acme/budgets", body, format="json")
    # then
    assert (console.status_code, api.status_code) == (400, 400)
    assert _problems(console.content.decode()) == [api.json()["error"]["message"]]
    assert 'value="hourly"' not in console.content.decode()  # a choice, not typed back
    assert 'value="1e13"' in console.content.decode()


@pytest.fixture
def fresh_runtime() -> Iterator[None]:
    runtime.reset()
    yield
    runtime.reset()


def test_r_bey_7_the_provider_keys_page_shows_a_cooling_credential(acme, people, fresh_runtime):
    # given two credentials, and the provider just refused one's key (the gateway's state)
    providers = [
        {"slug": s, "name": s, "base_url": "http://127.0.0.1:9"} for s in ("groq", "vault")
    ]
    apply_config({"providers": providers}, actor="test")
    for slug in ("groq", "vault"):
        create_credential(acme, slug, secret="sk-own-" + slug * 8, rules=CredentialRules(),
                          actor="test")  # fmt: skip
    failed_at = time.time()
    runtime.cooldowns().credentials.failure(acme.pk, "vault", "http_401", 401, failed_at)
    # when
    page = people["viewer"].get("/console/acme/credentials/").content.decode()
    # then
    vault = re.search(r'id="health-vault">(.*?)</p>', page, re.S)
    groq = re.search(r'id="health-groq">(.*?)</p>', page, re.S)
    assert vault is not None
    assert groq is not None
    health = request_state.credentials_health(acme.pk, ["vault"], failed_at)["vault"]
    until = str(health["cooling_until"]).replace("T", " ").removesuffix("Z")[:19]
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", vault.group(1))).split())
    assert text == (
        f"Health in this workspace: cooling down until {until} UTC (auth_or_not_found): "
        "meanwhile its calls skip the endpoints it serves · 1 failed attempt with this key in "
        "the last 5 minutes (this worker's count) · last failure http_401 at "
        f"{datetime.fromtimestamp(failed_at, tz=UTC):%Y-%m-%d %H:%M:%S} UTC"
    )
    assert " ".join(groq.group(1).split()) == (
        "Health in this workspace: ok, not cooling down · 0 failed attempts with this key in "
        "the last 5 minutes (this worker's count)"
    )
    assert "sk-own-" not in page
