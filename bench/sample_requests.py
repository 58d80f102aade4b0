"""`python -m bench.sample_requests [--count N] [--seed S]`: a seeded mix of realistic Chat
Completions request bodies (as the OpenAI SDK sends them) for the smart-routing sample
(bench/smart_sample.py, docs/smart-routing.md "A mixed sample"). Prints one JSON object per
line: `{"template": ..., "body": ...}`.

Each request comes from a named template (chit-chat, thanks, factual questions,
translations, summaries of pasted text at several lengths, code, tracebacks, patches,
effort keywords, tools, JSON schemas, images, threads, `reasoning_effort`); the template's
name travels beside the body, never in it. Wording varies by template × filler, so no two
texts are alike, and the same seed always gives the same requests.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bench.sample_chat import (
    build_chitchat,
    build_effort,
    build_factual,
    build_image,
    build_reasoning,
    build_thanks,
    build_thread,
)
from bench.sample_code import build_code, build_diff, build_traceback
from bench.sample_documents import build_summary, build_translation
from bench.sample_text import Body
from bench.sample_tools import build_json_schema, build_tools

DEFAULT_COUNT = 250
DEFAULT_SEED = 2026
MODEL = "normal"  # the demo workspace's tiered alias


@dataclass(frozen=True, slots=True)
class Template:
    name: str
    weight: int  # relative share of the sample
    typical_output_tokens: int  # completion length assumed for pricing when uncapped
    build: Callable[[random.Random], Body]


@dataclass(frozen=True, slots=True)
class SampleRequest:
    template: str
    body: Body


# --- the mix -------------------------------------------------------------------------------
# The templates' builders live by kind: bench/sample_chat.py (conversation),
# bench/sample_documents.py (pasted text), bench/sample_code.py, bench/sample_tools.py (tools
# and JSON schemas), on the shared pieces of bench/sample_text.py. Here: each template's
# weight and typical completion, the SDK's optional parameters, the split and the shuffle.

TEMPLATES: tuple[Template, ...] = (
    Template("chitchat", 12, 80, build_chitchat),
    Template("thanks", 8, 30, build_thanks),
    Template("factual", 14, 250, build_factual),
    Template("translation", 10, 300, build_translation),
    Template("summary_short", 5, 250, build_summary(400, 2_000)),
    Template("summary_2k", 5, 350, build_summary(2_000, 8_000)),
    Template("summary_8k", 4, 500, build_summary(8_000, 32_000)),
    Template("summary_32k", 2, 700, build_summary(32_000, 60_000)),
    Template("code", 9, 600, build_code),
    Template("traceback", 5, 500, build_traceback),
    Template("diff", 4, 700, build_diff),
    Template("effort", 5, 900, build_effort),
    Template("tools_few", 7, 150, lambda rng: build_tools(rng, 1, 4)),
    Template("tools_many", 3, 200, lambda rng: build_tools(rng, 5, 7)),
    Template("json_schema", 5, 200, build_json_schema),
    Template("image", 5, 250, build_image),
    Template("thread", 10, 350, build_thread),
    Template("reasoning_effort", 4, 1200, build_reasoning),
)
TEMPLATES_BY_NAME = {template.name: template for template in TEMPLATES}


def _sdk_options(rng: random.Random, body: Body) -> Body:
    """The model and the optional parameters clients commonly add."""
    request: Body = {"model": MODEL, **body}
    roll = rng.random()
    if roll < 0.15:
        request["max_tokens"] = rng.choice((256, 512, 1024))
    elif roll < 0.3:
        request["max_completion_tokens"] = rng.choice((800, 2048, 4096))
    if rng.random() < 0.3:
        request["stream"] = True
    if rng.random() < 0.2:
        request["temperature"] = rng.choice((0, 0.2, 0.7, 1))
    return request


def template_counts(count: int) -> dict[str, int]:
    """How many requests each template gets: `count` split by weight (largest remainder),
    at least one each when `count` allows."""
    total = sum(t.weight for t in TEMPLATES)
    floor = 1 if count >= len(TEMPLATES) else 0
    spare = count - floor * len(TEMPLATES)
    shares = {t.name: spare * t.weight / total for t in TEMPLATES}
    counts = {name: floor + int(share) for name, share in shares.items()}
    by_remainder = sorted(shares, key=lambda name: (int(shares[name]) - shares[name], name))
    for name in by_remainder[: count - sum(counts.values())]:
        counts[name] += 1
    return counts


def generate(count: int = DEFAULT_COUNT, seed: int = DEFAULT_SEED) -> list[SampleRequest]:
    """`count` requests in a shuffled order, split among templates by `template_counts`;
    the same seed always gives the same requests."""
    rng = random.Random(seed)
    names = [name for name, n in template_counts(count).items() for _ in range(n)]
    rng.shuffle(names)
    return [
        SampleRequest(name, _sdk_options(rng, TEMPLATES_BY_NAME[name].build(rng))) for name in names
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sample_requests", description=__doc__)
    parser.add_argument("--count", type=int, default=DEFAULT_COUNT, help=f"({DEFAULT_COUNT})")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"({DEFAULT_SEED})")
    args = parser.parse_args(argv)
    if args.count < 1:
        parser.error("--count must be at least 1")
    for request in generate(args.count, args.seed):
        print(json.dumps({"template": request.template, "body": request.body}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
