"""The code templates of the mixed sample (bench/sample_requests.py): snippets to explain
or fix (now and then with a whole module pasted), tracebacks, and `git diff` patches to
review."""

from __future__ import annotations

import random

from bench.sample_text import Body, pick, system, user

# --- code, tracebacks, patches -------------------------------------------------------------

SNIPPETS = (
    ("python", "def average(xs):\n    return sum(xs) / len(xs)\n\nprint(average([]))"),
    (
        "python",
        "items = {'a': 1, 'b': 2}\nfor k in items:\n    if items[k] > 1:\n        del items[k]",
    ),
    ("javascript", "const ids = [10, 1, 2];\nids.sort();\nconsole.log(ids); // [1, 10, 2]?"),
    (
        "javascript",
        "async function load() {\n  const res = fetch('/api/users');\n  return res.json();\n}",
    ),
    ("go", 'func main() {\n\tvar m map[string]int\n\tm["a"] = 1\n\tfmt.Println(m)\n}'),
    (
        "sql",
        "SELECT customer_id, COUNT(*)\nFROM orders\nWHERE created_at > '2025-01-01'\n"
        "ORDER BY 2 DESC;",
    ),
    ("rust", "fn first(v: &Vec<String>) -> &String {\n    let s = v[0].clone();\n    &s\n}"),
    ("bash", "for f in $(ls *.csv); do\n  wc -l $f\ndone"),
)
CODE_ASKS = (
    "Why does this {lang} code not do what I expect?\n\n```{lang}\n{code}\n```",
    "```{lang}\n{code}\n```\nwhat's wrong here?",
    "Can you make this {lang} snippet more idiomatic?\n```{lang}\n{code}\n```",
    "How would I write this in a more readable way?\n\n```\n{code}\n```\n\nIt is {lang}.",
    "Explain what this does, line by line:\n```{lang}\n{code}\n```",
)


def _code_ask(rng: random.Random) -> str:
    lang, code = rng.choice(SNIPPETS)
    return rng.choice(CODE_ASKS).replace("{lang}", lang).replace("{code}", code)


def build_code(rng: random.Random) -> Body:
    ask = _code_ask(rng)
    if rng.random() < 0.25:  # a bigger module pasted for context
        ask += "\n\nThe rest of the module, for context:\n```\n" + _module(rng) + "\n```"
    return {"messages": [*system(rng, ("none", "short", "rules")), user(ask)]}


def _module(rng: random.Random) -> str:
    functions = []
    for i in range(rng.randint(20, 70)):
        name = rng.choice(("load", "parse", "save", "render", "check", "merge")) + f"_{i}"
        functions.append(f"def {name}(row):\n    value = row.get('{name}')\n    return value")
    return "\n\n".join(functions)


TRACEBACKS = (
    'Traceback (most recent call last):\n  File "{path}", line {line}, in <module>\n'
    "    main()\n  File \"{path}\", line {line2}, in main\n    total = prices['{key}']\n"
    "KeyError: '{key}'",
    'Traceback (most recent call last):\n  File "{path}", line {line}, in handle\n'
    "    return int(payload['{key}'])\nValueError: invalid literal for int() with base 10: ''",
    'Exception in thread "main" java.lang.NullPointerException\n'
    "\tat com.acme.billing.InvoiceService.total(InvoiceService.java:{line})\n"
    "\tat com.acme.billing.Main.main(Main.java:{line2})",
    "TypeError: Cannot read properties of undefined (reading '{key}')\n"
    "    at renderRow (/srv/app/src/table.js:{line}:17)\n"
    "    at Array.map (<anonymous>)",
    "panic: runtime error: index out of range [{line}] with length {line2}\n\n"
    "goroutine 1 [running]:\nmain.main()\n\t/home/dev/cmd/sync/main.go:{line2} +0x1d",
)
TRACEBACK_ASKS = (
    "I get this when running {cmd}:\n\n{trace}\n\nany idea?",
    "{trace}",
    "Our nightly job died with\n```\n{trace}\n```\nWhat does it mean?",
    "help pls, deploy is blocked\n{trace}",
)


def build_traceback(rng: random.Random) -> Body:
    trace = pick(
        rng,
        TRACEBACKS,
        path=("app/main.py", "/srv/jobs/import_orders.py", "tasks/sync.py"),
        line=("12", "48", "131", "7"),
        line2=("3", "60", "210"),
        key=("sku", "user", "total"),
    )
    cmd = rng.choice(("the import script", "pytest", "npm start", "go run ./cmd/sync"))
    ask = rng.choice(TRACEBACK_ASKS).replace("{cmd}", cmd).replace("{trace}", trace)
    return {"messages": [*system(rng, ("none", "short")), user(ask)]}


DIFF_FILES = (
    "src/billing/invoice.py",
    "web/src/Table.tsx",
    "internal/sync/queue.go",
    "docs/setup.md",
    "migrations/0042_add_index.sql",
)
DIFF_CHANGES = (
    ("    total = compute(row)", "    total = compute(row, currency=row.currency)"),
    ("    if retries > 3:", "    if retries >= MAX_RETRIES:"),
    ("    return items[0]", "    return items[0] if items else None"),
    ("    log.info('synced %s', name)", "    log.info('synced %s in %.1f s', name, elapsed_s)"),
    ("    timeout = 30", "    timeout_s = settings.SYNC_TIMEOUT_S"),
    ("    for row in rows:", "    for row in sorted(rows, key=by_date):"),
)


def _diff(rng: random.Random) -> str:
    """A `git diff` of 1–4 files, one hunk each of 1–40 changed lines."""
    files = []
    for path in rng.sample(DIFF_FILES, rng.randint(1, 4)):
        start = rng.randint(1, 300)
        lines = [f"     # section {start}"]
        for _ in range(rng.randint(1, 40)):
            old, new = rng.choice(DIFF_CHANGES)
            lines += [f"-{old}", f"+{new}"] if rng.random() < 0.8 else [f" {old}"]
        removed = sum(1 for line in lines if not line.startswith("+"))
        added = sum(1 for line in lines if not line.startswith("-"))
        blobs = f"{rng.randrange(16**7):07x}..{rng.randrange(16**7):07x}"
        files.append(
            f"diff --git a/{path} b/{path}\nindex {blobs} 100644\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -{start},{removed} +{start},{added} @@\n" + "\n".join(lines)
        )
    return "\n".join(files)


def build_diff(rng: random.Random) -> Body:
    ask = rng.choice(
        (
            "Can you review this patch?\n\n{diff}",
            "{diff}\n\nLGTM?",
            "Please write a commit message for:\n{diff}",
            "Any bugs in this change?\n\n{diff}",
        )
    ).replace("{diff}", _diff(rng))
    return {"messages": [*system(rng, ("none", "short", "rules")), user(ask)]}
