"""Budgets through a live gateway (SPEC R-POL-2, R-LIM-2, R-BEY-8, D-28): a request
reserves its worst case before the first attempt and settles to its cost; concurrent
requests cannot overspend; an exhausted budget is 402 before any upstream call; every
response says what remains, and `GET budgets` shows a key's spending once settled. The
shared gateway runs the store its database implies (this process on SQLite; PostgreSQL,
or Redis when REDIS_URL is set, in CI's second pass).

A model of its own on the paced fake (20 tokens at 40 tokens/s: half a second a request),
so the concurrent requests of a race are all in flight before the first one settles, and
prices high enough that a request costs thousands of micro-dollars."""

from __future__ import annotations

import concurrent.futures
import shutil
import subprocess
import uuid
from decimal import Decimal

import httpx
import openai
import pytest

from fakeupstream.process import free_port
from gateway.processes import running_gateway
from tests.live.installation import Live
from tests.management_api.test_budgets_limits_api import WS
from tests.waiting import wait_for

pytestmark = pytest.mark.live

MODEL = "budget/paced"
HEADER = "x-switchyard-budget-remaining-usd"
REPLY_TOKENS = 20
PROMPT = [{"role": "user", "content": "hi"}]


def catalog(workspaces: str) -> str:
    return f"""\
models:
  - {{slug: {MODEL}, capabilities: [text], context_window: 8192}}
endpoints:
  - {{id: paced-budget, provider: paced, model: {MODEL}, upstream_model: paced-b,
      region: us-east-1, price: {{input: 1000, output: 1000}}, sovereignty_class: any}}
workspaces:
{workspaces}"""


def budgeted(live: Live, slug: str, usd: str, *, alerts: str = "[]") -> openai.OpenAI:
    """A workspace whose only budget is `usd` a day, and a client with its key."""
    path = live.log_path.parent / f"budget-{slug}.yaml"
    path.write_text(catalog(f"""\
  - slug: {slug}
    budgets: [{{period: daily, usd: {usd}, alerts: {alerts}}}]
"""))  # fmt: skip
    live.manage("apply", "-f", str(path))
    key = live.manage("createkey", "--workspace", slug).strip()
    client = openai.OpenAI(base_url=live.base_url, api_key=key, max_retries=0, timeout=20)
    live.wait_for_key(key)
    live.wait_for_model(client, MODEL)
    return client


def ask(client: openai.OpenAI, url: str = "") -> httpx.Response:
    return httpx.post(
        url or f"{client.base_url}chat/completions",
        headers={"Authorization": f"Bearer {client.api_key}"},
        json={"model": MODEL, "messages": PROMPT, "max_tokens": REPLY_TOKENS},
        timeout=30,
    )


def micros(usd: str) -> int:
    return int(Decimal(usd) * 1_000_000)


@pytest.fixture(scope="module")
def worst_case(live: Live) -> int:
    """What one request reserves (R-BEY-8), read off a roomy budget's remaining header."""
    live.fakes["paced"].reset()  # set up before the first test's `fresh_live` resets it
    client = budgeted(live, "budget-probe", "1000")
    answer = ask(client)
    assert answer.status_code == 200, answer.text
    return micros("1000") - micros(answer.headers[HEADER])


def spent_micros(live: Live, slug: str) -> int:
    """The workspace's spending as the ledger holds it (the durable truth)."""
    code = (
        "from django.db.models import Sum; from budgets.models import SpendEntry;"
        "from workspaces.models import Workspace;"
        f"ws = Workspace.objects.get(slug={slug!r});"
        "print(SpendEntry.objects.filter(workspace_id=ws.pk, counter__startswith=f'ws:{ws.pk}:')"
        ".aggregate(s=Sum('cost_micros'))['s'] or 0)"
    )
    return int(live.manage("shell", "--no-imports", "-c", code).strip())


def test_r_bey_8_a_request_reserves_its_worst_case_and_is_told_what_remains(fresh_live, worst_case):
    # then: input estimate plus max_tokens at the endpoint's price (1000 µ$ per token)
    assert worst_case % 1000 == 0
    assert worst_case >= (REPLY_TOKENS + 1) * 1000


def test_r_pol_2_concurrent_requests_cannot_overspend(fresh_live, worst_case):
    """The barrier race: a budget that admits exactly 20 worst cases, 200 at once."""
    cap = 20 * worst_case
    client = budgeted(fresh_live, "budget-race", str(Decimal(cap) / 1_000_000))
    # Each admitted request is held upstream long enough for all 200 to be decided while
    # the first 20 are still in flight (a settled one gives back what it did not spend),
    # by a gateway of this installation that waits for it (the shared one: 2 + 3 s).
    fresh_live.fakes["paced"].set_faults([{"fault": "latency:6000", "times": None}])
    patient = fresh_live.own_env(SWITCHYARD_TTFB_TIMEOUT_S="30")
    # when
    with running_gateway(patient) as gateway:
        url = f"{gateway.base_url}/chat/completions"
        with concurrent.futures.ThreadPoolExecutor(max_workers=200) as pool:
            answers = list(pool.map(lambda _: ask(client, url), range(200)))
    # then exactly 20 were admitted, the rest refused with 402 before any upstream call —
    # none failing closed for want of a pooled Redis connection under the burst
    statuses = sorted(a.status_code for a in answers)
    odd = {a.status_code: a.text for a in answers if a.status_code not in (200, 402)}
    assert statuses.count(200) == 20, (statuses, odd)
    assert statuses.count(402) == 180, (statuses, odd)
    refused = next(a for a in answers if a.status_code == 402)
    assert refused.json()["error"]["code"] == "budget_exceeded"
    assert HEADER in refused.headers
    assert fresh_live.fakes["paced"].stats()["requests"] == 20
    # and what was recorded stays under the cap
    spent = wait_for(lambda: spent_micros(fresh_live, "budget-race"),
                     "the race's spending to reach the ledger", 5, interval_s=0.1)  # fmt: skip
    assert 0 < spent <= cap


def test_r_pol_2_an_exhausted_budget_is_402_before_any_endpoint(fresh_live, worst_case):
    client = budgeted(fresh_live, "budget-small", str(Decimal(worst_case - 1) / 1_000_000))
    # when
    answer = ask(client)
    # then
    assert answer.status_code == 402
    assert answer.json()["error"]["code"] == "budget_exceeded"
    assert "workspace daily" in answer.json()["error"]["message"]
    assert answer.headers[HEADER] == str(Decimal(worst_case - 1) / 1_000_000)
    assert fresh_live.fakes["paced"].stats()["requests"] == 0


def test_r_lim_2_a_request_settles_to_its_cost(fresh_live, worst_case):
    client = budgeted(fresh_live, "budget-settle", "1000")
    # when a request ends (its settlement follows the answer: wait until it is in the ledger)
    first = ask(client)
    usage = first.json()["usage"]
    cost = (usage["prompt_tokens"] + usage["completion_tokens"]) * 1000
    _until_spent(fresh_live, "budget-settle", cost)
    second = ask(client)
    # then the next one saw it settled to its cost, less than its worst case
    assert first.status_code == second.status_code == 200
    assert micros(second.headers[HEADER]) == micros("1000") - cost - worst_case
    _until_spent(fresh_live, "budget-settle", 2 * cost)


def _until_spent(live: Live, slug: str, micros_: int) -> None:
    wait_for(lambda: spent_micros(live, slug) == micros_,
             f"the ledger to hold exactly {micros_} µ$ spent by {slug}", 5)  # fmt: skip


def test_d_28_a_stream_cut_short_settles_to_an_estimate_not_zero(fresh_live, worst_case):
    client = budgeted(fresh_live, "budget-stream", "1000")
    fresh_live.fakes["paced"].set_faults(["drop_mid_stream:3"])
    # when the upstream drops the stream after three chunks, without usage
    stream = client.chat.completions.create(model=MODEL, messages=PROMPT,
                                            max_tokens=REPLY_TOKENS, stream=True)  # fmt: skip
    with stream, pytest.raises(openai.APIError):
        for _ in stream:
            pass
    # then it was charged the input estimate and the streamed characters, never zero
    spent = wait_for(lambda: spent_micros(fresh_live, "budget-stream"),
                     "the cut stream to be charged", 5, interval_s=0.1)  # fmt: skip
    assert 1000 <= spent < worst_case


def test_r_lim_2_an_alert_threshold_fires_once_per_period(fresh_live, worst_case):
    # given a budget of ten worst cases with alerts at 10 % and 20 %
    usd = Decimal(10 * worst_case) / 1_000_000
    client = budgeted(fresh_live, "budget-alerts", str(usd), alerts="[0.1, 0.2]")
    # when requests spend past both thresholds, and then some
    for _ in range(5):
        assert ask(client).status_code == 200
    # then each threshold became one audit event
    code = (
        "from audit.models import AdminEvent;"
        "print(sorted(e.changes['threshold'] for e in AdminEvent.objects.filter("
        "action='budget.alert', workspace__slug='budget-alerts')))"
    )
    wait_for(lambda: fresh_live.manage("shell", "--no-imports", "-c", code).strip() == "[0.1, 0.2]",
             "one budget.alert audit event for each of 0.1 and 0.2", 5, interval_s=0.1)  # fmt: skip
    metrics = httpx.get(f"{fresh_live.gateway.url}/metrics").text
    assert 'switchyard_budget_alerts_total{budget="workspace daily",threshold="0.1"}' in metrics


def test_r_lim_2_a_client_gone_mid_stream_settles_to_what_was_streamed(fresh_live, worst_case):
    client = budgeted(fresh_live, "budget-gone", "1000")
    # when the client reads two chunks of a paced stream and hangs up
    with httpx.stream(
        "POST", f"{client.base_url}chat/completions",
        headers={"Authorization": f"Bearer {client.api_key}"},
        json={"model": MODEL, "messages": PROMPT, "max_tokens": REPLY_TOKENS, "stream": True},
    ) as stream:  # fmt: skip
        lines = stream.iter_lines()
        assert next(lines).startswith("data:")
    # then its reservation settled to the input and what had streamed: not zero, not all
    spent = wait_for(lambda: spent_micros(fresh_live, "budget-gone"),
                     "the abandoned stream to be settled", 5, interval_s=0.1)  # fmt: skip
    assert 1000 <= spent < worst_case


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server")
def test_r_lim_2_fails_closed_when_the_budget_store_is_unreachable(fresh_live):
    # given a gateway whose budgets live in a Redis of its own, which then goes down
    client = budgeted(fresh_live, "budget-closed", "1000")
    port = free_port()
    redis_server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no"], stdout=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        env = fresh_live.own_env(SWITCHYARD_ADMISSION_STORE="redis",
                                 REDIS_URL=f"redis://127.0.0.1:{port}/0")  # fmt: skip
        with running_gateway(env) as closed:
            before = _post(closed.base_url, client.api_key, MODEL)
            redis_server.kill()
            redis_server.wait()
            # when a budgeted request comes in, and one no budget applies to
            answer = _post(closed.base_url, client.api_key, MODEL)
            free = _post(closed.base_url, fresh_live.keys["acme"], "meta/llama-3.3-70b")
            health = httpx.get(f"{closed.url}/healthz", timeout=10)
    finally:
        redis_server.kill()
    # then the budgeted one is refused, never admitted unchecked, and /healthz says why
    assert before.status_code == 200
    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == "budget_store_unavailable"
    assert fresh_live.fakes["paced"].stats()["requests"] == 1
    assert free.status_code == 200
    assert health.status_code == 503
    assert health.json()["checks"]["budget_store"] is False


def _post(base_url: str, key: str, model: str) -> httpx.Response:
    return httpx.post(f"{base_url}/chat/completions", headers={"Authorization": f"Bearer {key}"},
                      json={"model": model, "messages": PROMPT, "max_tokens": 5},
                      timeout=20)  # fmt: skip


def test_r_lim_2_a_budgeted_keys_spending_shows_in_get_budgets(fresh_live: Live):
    # given a key with a budget of its name, set through the API of a running gateway
    name = f"budgeted-{uuid.uuid4().hex[:8]}"
    token = fresh_live.manage("createtoken", "--workspace", "acme", "--role", "admin",
                              "--name", f"{name}-token").strip()  # fmt: skip
    api = httpx.Client(base_url=f"{fresh_live.gateway.url}{WS}",
                       headers={"Authorization": f"Bearer {token}"}, timeout=10)  # fmt: skip
    key = fresh_live.new_key("acme", name)
    saved = api.post("/budgets", json={"key_name": name, "period": "daily", "usd": 100})
    assert saved.status_code == 201, saved.text

    # when a request goes through the key, once the gateway's snapshot has the budget
    def budgeted() -> bool:
        answer = httpx.post(
            f"{fresh_live.base_url}/chat/completions", headers={"Authorization": f"Bearer {key}"},
            json={"model": "meta/llama-3.3-70b", "max_tokens": 16,
                  "messages": [{"role": "user", "content": "hi"}]}, timeout=20,
        )  # fmt: skip
        assert answer.status_code == 200, answer.text
        return "x-switchyard-budget-remaining-usd" in answer.headers

    wait_for(budgeted, "the key's budget to reach the gateway (a budget header)", 5, interval_s=0.1)

    # then its spending shows, settled: nothing reserved any more
    def settled() -> list[dict] | None:
        rows = [b for b in api.get("/budgets").json() if b["key_name"] == name]
        assert len(rows) == 1
        return rows if rows[0]["spent_usd"] > 0 and rows[0]["reserved_usd"] == 0 else None

    rows = wait_for(settled, f"GET /budgets to show {name}'s spending, settled", 10, interval_s=0.1)
    assert rows[0]["remaining_usd"] == pytest.approx(100 - rows[0]["spent_usd"])
    assert rows[0]["requests"] >= 1
