"""The request log at scale (SPEC R-OBS-1, R-API-7; docs/performance.md, "Request log at a
million traces"):
a throw-away PostgreSQL database filled with `--count` traces (default 1,000,000: a
month of one workspace's traffic, two keys, four models, three providers, 2 % errors,
tiers, sessions, each row with a realistic decision record), then

1. the management API's `GET /api/v1/workspaces/{ws}/traces` first page, filtered
   pages, a cursor page and a trace detail, each timed `--repeat` times over HTTP on a
   running gateway (p50 / p95 / max);
2. the console's request log (`/console/{ws}/requests/`: first page, filtered pages, a
   cursor page) and trace page, rendered for a signed-in viewer, timed the same way;
3. the retention purge of the oldest ~10 % (100k rows of a million) while another thread
   inserts traces the way the trace writer does, every insert timed.

    python -m bench.trace_log [--count N] [--repeat N] [--admin-url postgres://…]

Nothing here touches the developer's database: the database is made for the run and
dropped after it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import orjson

from bench.stack import postgres_database
from gateway.processes import base_env, running_gateway

SPAN_DAYS = 30
MODELS = ("meta/llama-3.3-70b", "openai/gpt-4o-mini", "anthropic/claude-sonnet-4", "acme/tiny")
PROVIDERS = ("cheap", "pricey", "anthro")
CHUNK = 100_000


def decision_record() -> dict[str, Any]:
    """A decision record the size of a real one: four candidates, six factors each."""
    factors = ["price", "latency", "throughput", "reliability", "fit", "warm_cache"]
    scored = [
        {
            "endpoint": f"{p}-ep",
            "score": 0.71 - i / 10,
            "demoted": i == 3,
            "multipliers": [{"name": "health", "value": 1.0}],
            "factors": [
                {"name": f, "value": 0.5, "normalized": 0.4, "weight": 0.2, "contribution": 0.08}
                for f in factors
            ],
        }
        for i, p in enumerate([*PROVIDERS, "spare"])
    ]
    return {
        "request": {
            "requested_model": "auto",
            "model": None,
            "auto": True,
            "mode": "balanced",
            "residency": "any",
            "task": "chat",
            "input_tokens": 812,
            "output_tokens": 256,
            "provider": {"order": [], "only": [], "ignore": [], "regions": []},
        },
        "decisions": [
            {
                "model": MODELS[0],
                "algorithm": "switchyard-2026.11",
                "seed": 7,
                "mode": "balanced",
                "reason": "cheapest healthy endpoint",
                "ordered": [s["endpoint"] for s in scored],
                "scored": scored,
                "rejected": [{"endpoint": "eu-ep", "reason": "region_not_allowed"}],
            }
        ],
        "tier": {"alias": "smart", "tier": "hard", "score": 14, "source": "classifier"},
    }


GENERATE_SQL = """
INSERT INTO audit_requesttrace (id, request_id, workspace_id, api_key_id, created_at,
  operation, requested_model, model, provider, endpoint, stream, status_code, error_code,
  decision, attempts, usage, cost_micros, latency_ms, ttfb_ms, purpose, parent_id, route,
  route_version, route_node, tier, session_id)
SELECT md5(%(seed)s || g::text)::uuid, 'req-' || g, %(ws)s,
  CASE WHEN g %% 3 = 0 THEN %(key_b)s ELSE %(key_a)s END,
  %(now)s - g * %(step)s * interval '1 second',
  'chat.completions', m.name, m.name, p.name, p.name || '-ep', g %% 5 = 0,
  CASE WHEN g %% 50 = 0 THEN 502 WHEN g %% 97 = 0 THEN 429 ELSE 200 END,
  CASE WHEN g %% 50 = 0 THEN 'upstream_error' WHEN g %% 97 = 0 THEN 'rate_limited' ELSE '' END,
  %(decision)s::jsonb,
  jsonb_build_array(jsonb_build_object('provider', p.name, 'model', m.name,
    'endpoint', p.name || '-ep', 'status', CASE WHEN g %% 50 = 0 THEN 'error' ELSE 'ok' END,
    'http_status', CASE WHEN g %% 50 = 0 THEN 502 ELSE 200 END, 'latency_ms', 200 + g %% 900,
    'error', NULL)),
  '{"prompt_tokens": 812, "completion_tokens": 256}'::jsonb, 1200 + g %% 5000, 250 + g %% 900,
  CASE WHEN g %% 5 = 0 THEN 80 + g %% 200 END, '', NULL, '', NULL, '',
  CASE WHEN g %% 10 < 3 THEN 'hard' WHEN g %% 10 < 6 THEN 'easy' ELSE '' END,
  CASE WHEN g %% 20 = 0 THEN 'sess-' || (g / 20) %% 5000 ELSE '' END
FROM generate_series(%(first)s, %(last)s) AS g
CROSS JOIN LATERAL (SELECT (%(models)s::text[])[1 + g %% 4] AS name) AS m
CROSS JOIN LATERAL (SELECT (%(providers)s::text[])[1 + (g / 7) %% 3] AS name) AS p
"""


def generate(count: int, workspace_id: int, keys: tuple[int, int], now: datetime) -> None:
    from django.db import connection

    step = SPAN_DAYS * 86400 / count
    params = {
        "seed": uuid.uuid4().hex,
        "ws": workspace_id,
        "key_a": keys[0],
        "key_b": keys[1],
        "now": now,
        "step": step,
        "decision": orjson.dumps(decision_record()).decode(),
        "models": list(MODELS),
        "providers": list(PROVIDERS),
    }
    started = time.monotonic()
    with connection.cursor() as cursor:
        for first in range(1, count + 1, CHUNK):
            last = min(count, first + CHUNK - 1)
            cursor.execute(GENERATE_SQL, {**params, "first": first, "last": last})
            print(f"  {last:>9,} traces ({time.monotonic() - started:.0f} s)", flush=True)
        cursor.execute("ANALYZE audit_requesttrace")


def timed(call: Callable[[], httpx.Response], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        response = call()
        samples.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.text[:300]
    return samples


def api_cases(base: str, token: str, sample_id: str, repeat: int) -> None:
    api = httpx.Client(
        base_url=f"{base}/api/v1/workspaces/bench",
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    first = api.get("/traces").json()
    long_ago = (datetime.now(UTC) - timedelta(days=20)).isoformat()
    cases: dict[str, Callable[[], httpx.Response]] = {
        "first page (50 rows)": lambda: api.get("/traces"),
        "page 2 (cursor)": lambda: api.get("/traces", params={"cursor": first["next_cursor"]}),
        "model filter": lambda: api.get("/traces", params={"model": "acme/tiny"}),
        "status=502 filter": lambda: api.get("/traces", params={"status": 502}),
        "key filter": lambda: api.get("/traces", params={"key": "batch"}),
        "session filter": lambda: api.get("/traces", params={"session_id": "sess-42"}),
        "provider+status+tier": lambda: api.get(
            "/traces", params={"provider": "pricey", "status": 429, "tier": "hard"}
        ),
        "20 days ago (until)": lambda: api.get("/traces", params={"until": long_ago}),
        "200 rows": lambda: api.get("/traces", params={"limit": 200}),
        "trace detail": lambda: api.get(f"/traces/{sample_id}"),
    }
    report(cases, repeat)


def report(cases: dict[str, Callable[[], httpx.Response]], repeat: int) -> None:
    for case in cases.values():  # warm: connection, caches, the plan cache
        case()
    print(f"\n{'request':<28}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}")
    for name, case in cases.items():
        ms = sorted(timed(case, repeat))
        p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))]
        print(f"{name:<28}{statistics.median(ms):>9.1f}{p95:>9.1f}{ms[-1]:>9.1f}")


def console_cases(base: str, password: str, sample_id: str, repeat: int) -> None:
    """The console's pages for a signed-in viewer: one HTML page each, whole."""
    import re

    web = httpx.Client(base_url=f"{base}/console", timeout=30, follow_redirects=True)
    form = web.get("/sign-in/").text
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    assert token is not None
    signed = web.post(
        "/sign-in/",
        data={
            "username": "bench-viewer",
            "password": password,
            "csrfmiddlewaretoken": token.group(1),
        },
        headers={"Referer": f"{base}/console/sign-in/"},
    )
    assert signed.url.path == "/console/bench/requests/", signed.url
    older = re.search(r'rel="next" href="\?([^"]+)"', signed.text)
    assert older is not None
    cursor = older.group(1).replace("&amp;", "&")
    cases: dict[str, Callable[[], httpx.Response]] = {
        "console: first page": lambda: web.get("/bench/requests/"),
        "console: older (cursor)": lambda: web.get(f"/bench/requests/?{cursor}"),
        "console: model filter": lambda: web.get("/bench/requests/?model=acme/tiny"),
        "console: status=502": lambda: web.get("/bench/requests/?status=502"),
        "console: key+window 24h": lambda: web.get("/bench/requests/?key=batch&window=24h"),
        "console: provider+status+tier": lambda: web.get(
            "/bench/requests/?provider=pricey&status=429&tier=hard"
        ),
        "console: trace page": lambda: web.get(f"/bench/requests/{sample_id}/"),
    }
    report(cases, repeat)


def purge_while_inserting(workspace_id: int, now: datetime) -> None:
    from django.db import connections

    from audit.record import insert
    from audit.retention import purge_expired_traces
    from workspaces.models import Policy

    Policy.objects.update_or_create(workspace_id=workspace_id, defaults={"retention": "27d"})
    latencies: list[float] = []
    done = threading.Event()

    def keep_inserting() -> None:
        while not done.is_set():
            started = time.perf_counter()
            insert(
                [
                    {
                        "id": uuid.uuid4(),
                        "request_id": "live",
                        "workspace_id": workspace_id,
                        "operation": "chat.completions",
                        "requested_model": "m",
                        "status_code": 200,
                        "decision": decision_record(),
                    }
                ]
            )
            latencies.append((time.perf_counter() - started) * 1000)
            time.sleep(0.005)
        connections.close_all()

    inserter = threading.Thread(target=keep_inserting)
    inserter.start()
    time.sleep(0.5)
    started = time.monotonic()
    purged = purge_expired_traces(now)
    took = time.monotonic() - started
    time.sleep(0.5)
    done.set()
    inserter.join()
    ms = sorted(latencies)
    p99 = ms[int(len(ms) * 0.99)]
    print(
        f"\npurge: {purged:,} rows in {took:.1f} s while {len(ms)} inserts ran: insert "
        f"p50 {statistics.median(ms):.1f} ms, p99 {p99:.1f} ms, max {ms[-1]:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--admin-url", default="postgres://postgres@127.0.0.1:5432/postgres")
    args = parser.parse_args()
    with postgres_database(args.admin_url) as url, tempfile.TemporaryDirectory() as tmp:
        os.environ.update(DATABASE_URL=url, DJANGO_SETTINGS_MODULE="gateway.settings")
        import django

        django.setup()
        from django.core.management import call_command

        from audit.models import RequestTrace
        from workspaces.models import Workspace
        from workspaces.services import (
            create_api_key,
            create_console_user,
            create_management_token,
        )

        call_command("migrate", verbosity=0)
        workspace = Workspace.objects.create(slug="bench", name="Bench")
        keys = [
            create_api_key(workspace, name=name, actor="bench").api_key.pk
            for name in ("interactive", "batch")
        ]
        token = create_management_token(workspace, role="viewer", name="bench", actor="bench")
        password = uuid.uuid4().hex
        create_console_user(
            workspace, "bench-viewer", password=password, role="viewer", actor="bench"
        )
        now = datetime.now(UTC)
        print(f"generating {args.count:,} traces")
        generate(args.count, workspace.pk, (keys[0], keys[1]), now)
        sample = RequestTrace.objects.filter(request_id=f"req-{args.count // 2}").first()
        assert sample is not None
        env = base_env(
            DATABASE_URL=url, SWITCHYARD_TRACE_SPOOL_DIR=tmp, SWITCHYARD_SECURE_COOKIES="false"
        )
        log_path = Path(tmp) / "gateway.log"
        try:
            with running_gateway(env, log_path=log_path) as gateway:
                base = f"http://127.0.0.1:{gateway.port}"
                api_cases(base, token.plaintext, str(sample.id), args.repeat)
                console_cases(base, password, str(sample.id), args.repeat)
        except AssertionError:
            print(log_path.read_text()[-4000:])
            raise
        purge_while_inserting(workspace.pk, now)
        from django.db import connections

        connections.close_all()


if __name__ == "__main__":
    main()
