"""`python -m bench.smart_sample [--count N] [--seed S]` (`make smart-sample`): what smart
routing does with a mixed sample of requests (bench/sample_requests.py). Prints a Markdown
report: the tier split with the hard reasons, the score histogram, the workload split, and
the cost per 1k requests with tiers against sending everything to either tier.

The real pure classifiers run: `routing.engine.tiers.choose.classify` with the demo workspace's
`smart_routing` settings (gateway/demo/switchyard-demo.yaml, read with the project's own
config schema; no database), `routing.engine.workload.classify`, and the auto router's local
verdict (`routing.engine.auto.classify.classify_locally`) for complexity and confidence. Each
request is classified on its own: no session pins (R-TIER-3) and no override headers.

A request is priced at the cheapest routable endpoint of a tier's target model (for a
virtual target, the cheapest among its concrete targets — a lower bound, since a virtual
model routes by its strategy): input tokens as `routing.engine.workload.estimate_chat_tokens`
counts them, output tokens as the template's typical completion length, capped by the
request's `max_tokens` / `max_completion_tokens`.
"""

from __future__ import annotations

import argparse
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from statistics import fmean
from typing import Any

import yaml

from bench import auto_sample
from bench.sample_requests import DEFAULT_COUNT, DEFAULT_SEED, TEMPLATES, SampleRequest, generate
from routing.engine import workload
from routing.engine.auto.classify import classify_locally
from routing.engine.tiers import choose as tiers
from routing.engine.tiers.choose import EASY, HARD, TierAlias, TierConfig, Verdict

DEMO_CONFIG = Path(__file__).resolve().parent.parent / "gateway" / "demo" / "switchyard-demo.yaml"
WORKSPACE = "demo"
ALIAS = "normal"
ROUTABLE_STATUSES = frozenset({"active", "degraded"})
TOKENS_PER_PRICE_UNIT = 1_000_000  # catalog prices are USD per 1M tokens
REQUESTS_PER_REPORT_UNIT = 1_000  # costs are reported per 1k requests
HISTOGRAM_WIDTH = 40  # characters of the longest bar
TYPICAL_OUTPUT_TOKENS = {t.name: t.typical_output_tokens for t in TEMPLATES}


@dataclass(frozen=True, slots=True)
class EndpointPrice:
    endpoint_id: str
    model: str
    input_usd_per_m: Decimal
    output_usd_per_m: Decimal

    def cost_usd(self, input_tokens: int, output_tokens: int) -> Decimal:
        usd = input_tokens * self.input_usd_per_m + output_tokens * self.output_usd_per_m
        return usd / TOKENS_PER_PRICE_UNIT


@dataclass(frozen=True, slots=True)
class TierTarget:
    slug: str  # the alias's target as configured: a model or a virtual model
    concrete: tuple[str, ...]  # the models priced: the slug itself, or its concrete targets
    endpoints: tuple[EndpointPrice, ...]  # routable endpoints of those models

    def cost_usd(self, input_tokens: int, output_tokens: int) -> Decimal:
        """The request's cost at the cheapest of the endpoints for this request."""
        return min(e.cost_usd(input_tokens, output_tokens) for e in self.endpoints)


@dataclass(frozen=True, slots=True)
class DemoSetup:
    config: TierConfig
    alias: TierAlias
    targets: Mapping[str, TierTarget]  # by tier


@dataclass(frozen=True, slots=True)
class Row:
    """One classified and priced request (no content: the template names it)."""

    template: str
    verdict: Verdict
    workload: str
    complexity: float  # 0..1, the auto router's local verdict
    confidence: float
    input_tokens: int
    output_tokens: int
    cost_usd: Mapping[str, Decimal]  # by tier: the request sent to that tier's target


@dataclass(frozen=True, slots=True)
class SampleReport:
    setup: DemoSetup
    seed: int
    rows: tuple[Row, ...]

    def tier_counts(self) -> Counter[str]:
        return Counter({EASY: 0, HARD: 0}) + Counter(row.verdict.tier for row in self.rows)

    def cost_per_1k_usd(self, tier: str | None) -> Decimal:
        """Cost per 1k requests: each at its own verdict's tier (None), or all at `tier`."""
        return self._total_usd(tier) * REQUESTS_PER_REPORT_UNIT / len(self.rows)

    def hard_share_pct(self) -> Decimal:
        """The hard-tier requests' share of the tiered cost, in %."""
        return self._total_usd(None, only=HARD) / self._total_usd(None) * 100

    def saving_pct(self) -> Decimal:
        """How much cheaper tiers are than everything to the hard tier, in %."""
        hard = self.cost_per_1k_usd(HARD)
        return (hard - self.cost_per_1k_usd(None)) / hard * 100

    def _total_usd(self, tier: str | None, only: str | None = None) -> Decimal:
        """The sample's cost with every request at `tier` (None: its verdict's), counting
        only the requests of verdict tier `only` when given."""
        rows = [row for row in self.rows if only in (None, row.verdict.tier)]
        return sum((row.cost_usd[tier or row.verdict.tier] for row in rows), start=Decimal(0))


def load_demo(path: Path = DEMO_CONFIG) -> DemoSetup:
    """The demo workspace's tier settings and its alias's targets with their prices, read
    with `declarative.schema.parse_config` (the schema `manage.py apply` uses)."""
    config = _parse(path)
    workspace = next(w for w in config.workspaces if w.slug == WORKSPACE)
    tier_settings = tiers.tier_config(workspace.smart_routing)
    if tier_settings is None or ALIAS not in tier_settings.aliases:
        raise ValueError(f"{path}: workspace {WORKSPACE!r} has no tiered alias {ALIAS!r}")
    alias = tier_settings.aliases[ALIAS]
    virtual = {v.slug: tuple(t["model"] for t in v.targets) for v in config.virtual_models}
    prices = [
        EndpointPrice(e.id, e.model, e.price_input, e.price_output)
        for e in config.endpoints
        if e.status in ROUTABLE_STATUSES
    ]
    targets = {}
    for tier, slug in ((EASY, alias.easy), (HARD, alias.hard)):
        concrete = _concrete_models(slug, virtual)
        endpoints = tuple(p for p in prices if p.model in concrete)
        if not endpoints:
            raise ValueError(f"{path}: tier {tier} target {slug!r} has no routable endpoint")
        targets[tier] = TierTarget(slug, concrete, endpoints)
    return DemoSetup(tier_settings, alias, targets)


def _parse(path: Path) -> Any:
    """The validated file. The schema's vocabulary (enum values) lives on the Django models,
    so Django is set up to import them; no database is opened."""
    import django
    from django.apps import apps

    if not apps.ready:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")
        django.setup()
    from declarative.schema import parse_config
    from management_api.config_apply import vocabulary

    return parse_config(yaml.safe_load(path.read_text()), vocabulary=vocabulary(), environ={})


def _concrete_models(slug: str, virtual: Mapping[str, tuple[str, ...]]) -> tuple[str, ...]:
    """`slug` itself when concrete, else every concrete model reachable through its targets
    (the schema rejects cycles)."""
    if slug not in virtual:
        return (slug,)
    found: list[str] = []
    for target in virtual[slug]:
        found += [m for m in _concrete_models(target, virtual) if m not in found]
    return tuple(found)


def output_tokens(request: SampleRequest) -> int:
    """The template's typical completion length, capped by the request's own limit."""
    typical = TYPICAL_OUTPUT_TOKENS[request.template]
    cap = workload.requested_output_tokens(request.body)
    return min(typical, cap) if cap else typical


def build_report(requests: Sequence[SampleRequest], setup: DemoSetup, seed: int) -> SampleReport:
    rows = []
    for request in requests:
        local = classify_locally(request.body)
        input_tokens = workload.estimate_chat_tokens(request.body)
        out = output_tokens(request)
        rows.append(
            Row(
                template=request.template,
                verdict=tiers.classify(request.body, setup.config),
                workload=workload.classify(request.body),
                complexity=local.complexity,
                confidence=local.confidence,
                input_tokens=input_tokens,
                output_tokens=out,
                cost_usd={
                    tier: target.cost_usd(input_tokens, out)
                    for tier, target in setup.targets.items()
                },
            )
        )
    return SampleReport(setup, seed, tuple(rows))


def render(report: SampleReport) -> str:
    return "\n".join(
        [
            *_heading(report),
            *_tiers(report),
            *_scores(report),
            *_workloads(report),
            *_templates(report),
            *_costs(report),
        ]
    )


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%"


def _heading(report: SampleReport) -> list[str]:
    alias, config = report.setup.alias, report.setup.config
    return [
        f"### Smart routing over a mixed sample: {len(report.rows)} requests (seed {report.seed})",
        "",
        f"Workspace `{WORKSPACE}`, alias `{alias.name}`: easy → `{alias.easy}`, hard →"
        f" `{alias.hard}`, threshold {config.threshold}. Each request classified on its own"
        " (no session pins, no override headers).",
        "",
    ]


def _tiers(report: SampleReport) -> list[str]:
    total, counts = len(report.rows), report.tier_counts()
    lines = ["#### Tiers", "", "| tier | requests | share |", "|---|---:|---:|"]
    lines += [f"| {tier} | {counts[tier]} | {_pct(counts[tier], total)} |" for tier in (EASY, HARD)]
    hard = [row.verdict for row in report.rows if row.verdict.tier == HARD]
    reasons = Counter(signal.name for verdict in hard for signal in verdict.signals)
    alone = Counter(v.signals[0].name for v in hard if len(v.signals) == 1)
    lines += [
        "",
        "Hard verdicts by signal (a verdict usually has several; 'alone' counts the verdicts"
        " that signal made hard by itself):",
        "",
        "| signal | hard requests | alone |",
        "|---|---:|---:|",
    ]
    lines += [f"| {name} | {n} | {alone[name]} |" for name, n in reasons.most_common()]
    return [*lines, ""]


def _scores(report: SampleReport) -> list[str]:
    classified = [row.verdict for row in report.rows if row.verdict.source == "classifier"]
    immediate = len(report.rows) - len(classified)
    counts = Counter(verdict.score for verdict in classified)
    threshold = report.setup.config.threshold
    lines = [
        f"#### Scores ({len(classified)} classified; {immediate} hard at once for"
        " `reasoning_effort` ≥ medium are left out)",
        "",
        "```",
    ]
    widest = max(counts.values(), default=1)
    for score in range(max(counts, default=0) + 1):
        bar = "#" * max(round(HISTOGRAM_WIDTH * counts[score] / widest), counts[score] > 0)
        marker = "  ← threshold" if score == threshold else ""
        lines.append(f"{score:>3} {bar:<{HISTOGRAM_WIDTH}} {counts[score]:>3}{marker}")
    return [*lines, "```", ""]


def _workloads(report: SampleReport) -> list[str]:
    total = len(report.rows)
    by_workload: dict[str, list[Row]] = {}
    for row in report.rows:
        by_workload.setdefault(row.workload, []).append(row)
    lines = [
        "#### Workloads (`routing.engine.workload.classify`)",
        "",
        "| workload | requests | share | hard | mean complexity | mean confidence |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, rows in sorted(by_workload.items(), key=lambda item: (-len(item[1]), item[0])):
        hard = sum(1 for row in rows if row.verdict.tier == HARD)
        complexity = fmean(row.complexity for row in rows)
        confidence = fmean(row.confidence for row in rows)
        lines.append(
            f"| {name} | {len(rows)} | {_pct(len(rows), total)} | {hard}"
            f" | {complexity:.2f} | {confidence:.2f} |"
        )
    return [*lines, ""]


def _templates(report: SampleReport) -> list[str]:
    """Per generator template: where it went, so a misfire shows up."""
    lines = [
        "#### By template",
        "",
        "| template | requests | hard | scores | workloads | output tokens assumed |",
        "|---|---:|---:|---|---|---:|",
    ]
    for template in TEMPLATES:
        rows = [row for row in report.rows if row.template == template.name]
        if not rows:
            continue
        hard = sum(1 for row in rows if row.verdict.tier == HARD)
        scores = sorted({row.verdict.score for row in rows})
        workloads = Counter(row.workload for row in rows).most_common()
        lines.append(
            f"| {template.name} | {len(rows)} | {hard} | {min(scores)}–{max(scores)}"
            f" | {', '.join(f'{w} {n}' for w, n in workloads)}"
            f" | {template.typical_output_tokens} |"
        )
    return [*lines, ""]


def _costs(report: SampleReport) -> list[str]:
    tiered, hard, easy = (report.cost_per_1k_usd(t) for t in (None, HARD, EASY))
    counts = report.tier_counts()
    lines = [
        "#### Cost per 1k requests",
        "",
        "| routing | USD per 1k requests |",
        "|---|---:|",
        f"| smart tiers | {tiered:.2f} |",
        f"| everything to hard | {hard:.2f} |",
        f"| everything to easy | {easy:.2f} |",
        "",
        f"Smart tiers cost {report.saving_pct():.1f}% less than sending everything to the hard"
        f" tier; the {_pct(counts[HARD], len(report.rows))} of requests on the hard tier make"
        f" {report.hard_share_pct():.1f}% of the tiered cost. Mean per request:"
        f" {fmean(r.input_tokens for r in report.rows):,.0f} input tokens"
        f" (`estimate_chat_tokens`), {fmean(r.output_tokens for r in report.rows):,.0f}"
        " output tokens (the template's typical length in the table above, capped by the"
        " request's `max_tokens` / `max_completion_tokens`).",
        "",
        "Priced at (USD per 1M tokens, input/output; the cheapest routable endpoint for each"
        " request):",
        "",
    ]
    for tier, target in report.setup.targets.items():
        prices = ", ".join(
            f"`{e.endpoint_id}` {e.input_usd_per_m}/{e.output_usd_per_m}" for e in target.endpoints
        )
        virtual = (
            f" (virtual; priced at its concrete targets {', '.join(target.concrete)})"
            if target.concrete != (target.slug,)
            else ""
        )
        lines.append(f"- {tier}: `{target.slug}`{virtual}: {prices}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.smart_sample", description=__doc__)
    parser.add_argument("--count", type=int, default=DEFAULT_COUNT, help=f"({DEFAULT_COUNT})")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"({DEFAULT_SEED})")
    args = parser.parse_args(argv)
    if args.count < 1:
        parser.error("--count must be at least 1")
    requests = generate(args.count, args.seed)
    report = build_report(requests, load_demo(), args.seed)
    print(render(report))
    print("\n".join(_auto(requests, report, args.seed)))
    return 0


def _auto(requests: Sequence[SampleRequest], report: SampleReport, seed: int) -> list[str]:
    """The auto router's first choice per request, and what that costs against the tiers."""
    bodies = [(r.body, output_tokens(r)) for r in requests]
    choices = auto_sample.choose(bodies, _parse(DEMO_CONFIG), WORKSPACE, seed)
    total = len(choices)
    per_1k = sum((c.cost_usd for c in choices), start=Decimal(0)) * REQUESTS_PER_REPORT_UNIT / total
    by_workload: dict[str, Counter[str]] = {}
    for row, choice in zip(report.rows, choices, strict=True):
        by_workload.setdefault(row.workload, Counter())[choice.model or "(none)"] += 1
    lines = [
        "",
        '#### The auto router (`"model": "auto"`, local classifier, fresh gateway)',
        "",
        "| model chosen first | requests | share |",
        "|---|---:|---:|",
    ]
    for model, count in Counter(c.model or "(none)" for c in choices).most_common():
        lines.append(f"| `{model}` | {count} | {_pct(count, total)} |")
    lines += ["", "| workload | first choices |", "|---|---|"]
    for name, counts in sorted(by_workload.items(), key=lambda item: -sum(item[1].values())):
        chosen = ", ".join(f"`{m}` {n}" for m, n in counts.most_common())
        lines.append(f"| {name} | {chosen} |")
    hard = report.cost_per_1k_usd(HARD)
    lines += [
        "",
        f"Cost per 1k requests with the auto router: {per_1k:.2f} USD, against"
        f" {report.cost_per_1k_usd(None):.2f} with smart tiers and {hard:.2f} with everything"
        f" on the hard tier ({(hard - per_1k) / hard * 100:.1f}% less). Priced at each"
        " choice's own endpoint; no live metrics, so latency and error rate are neutral.",
    ]
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
