"""The engine is pure (SPEC R-DEC-1): importing it pulls in no Django, HTTP client, Redis
or Celery, and it reads no clock or global randomness (checked by name in its source)."""

import pathlib
import subprocess
import sys

ROUTING = pathlib.Path(__file__).resolve().parents[2] / "routing"
# The only modules of `routing/` that may use Django: the catalog's tables and their admin,
# and the live-metric rollup's tables, its stores and its Celery task (the rollup's pure
# part is routing/engine/live_window.py and live_slices.py).
DJANGO_MODULES = frozenset({"models", "admin", "apps", "live_models", "rollup", "tasks"})
# Every other module of the folder (the simulator included) is the pure engine: a new module
# is covered the moment it is added, with no list to keep.
PURE_MODULES = sorted(
    ".".join(path.relative_to(ROUTING.parent).with_suffix("").parts)
    for path in ROUTING.rglob("*.py")
    if "migrations" not in path.parts and path.stem not in DJANGO_MODULES | {"__init__", "__main__"}
)
# `gateway` too: arrows point from the gateway down into the engine, never back.
FORBIDDEN = ("django", "httpx", "aiohttp", "redis", "celery", "asgiref", "gateway")


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
    for module in PURE_MODULES:
        source = (ROUTING.parent / (module.replace(".", "/") + ".py")).read_text()
        for call in ("time.time(", "time.monotonic(", "datetime.now(", "random.random(",
                     "random.choice(", "random.shuffle(", "os.urandom("):  # fmt: skip
            assert call not in source, f"{module} calls {call}"
