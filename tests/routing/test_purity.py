"""The engine is pure (SPEC R-DEC-1): importing it pulls in no Django, HTTP client, Redis
or Celery, and it reads no clock or global randomness (checked by name in its source)."""

import pathlib
import subprocess
import sys

PURE_MODULES = [
    "routing.types", "routing.names", "routing.resolve", "routing.language", "routing.workload",
    "routing.filters", "routing.policy", "routing.scoring", "routing.fit", "routing.decide",
    "routing.virtual", "routing.tiers", "routing.tier_pins", "routing.sessions",
    "routing.live", "routing.cooldowns", "routing.adaptive", "routing.affinity",
    "routing.autorouter", "routing.auto_classify", "routing.benchmarks",
    "routing.cache_affinity",
]  # fmt: skip
FORBIDDEN = ("django", "httpx", "aiohttp", "redis", "celery", "asgiref")


def test_r_dec_1_engine_imports_no_framework_or_network_module():
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in PURE_MODULES)
        + f"bad = sorted({{m.split('.')[0] for m in sys.modules}} & set({FORBIDDEN!r}))\n"
        + "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)  # fmt: skip
    assert result.stdout.strip() == ""


def test_r_dec_1_engine_reads_no_clock_or_global_randomness():
    root = pathlib.Path(__file__).resolve().parents[2]
    for module in PURE_MODULES:
        source = (root / (module.replace(".", "/") + ".py")).read_text()
        for call in ("time.time(", "time.monotonic(", "datetime.now(", "random.random(",
                     "random.choice(", "random.shuffle(", "os.urandom("):  # fmt: skip
            assert call not in source, f"{module} calls {call}"
