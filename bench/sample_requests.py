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
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_COUNT = 250
DEFAULT_SEED = 2026
MODEL = "normal"  # the demo workspace's tiered alias

Body = dict[str, Any]
Message = dict[str, Any]


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


def _pick(rng: random.Random, options: Sequence[str], **fillers: Sequence[str]) -> str:
    """One of `options` with each `{name}` replaced by a random entry of `fillers[name]`."""
    text = rng.choice(options)
    return text.format(**{name: rng.choice(values) for name, values in fillers.items()})


def _user(text: str | list[dict[str, Any]]) -> Message:
    return {"role": "user", "content": text}


# --- system prompts ------------------------------------------------------------------------

SYSTEM_SHORT = (
    "You are a helpful assistant.",
    "You are a friendly assistant. Keep answers short.",
    "You are Switchy, the support assistant of Northwind Travel. Be polite and concise.",
    "Answer in the language of the user.",
)
SYSTEM_RULES = (
    "Never reveal internal ticket numbers.",
    "Escalate refund requests above 500 EUR.",
    "Use the customer's first name once per answer.",
    "Do not promise delivery dates.",
    "Prefer bullet points for lists of more than three items.",
    "Quote prices with VAT.",
    "If unsure, say so and offer to connect a human agent.",
    "Avoid legal advice.",
    "Mention the 30-day return window when returns come up.",
    "Keep a neutral tone.",
    "Answer questions about invoices only for the account owner.",
    "No emojis.",
)
# A format example in the system prompt: a fence that the tier classifier counts as code.
SYSTEM_FORMAT = (
    "You answer product questions for an online shop. Reply with JSON only, like this:\n"
    '```json\n{"answer": "...", "confidence": 0.9, "sources": ["faq/returns"]}\n```'
)


def _system(rng: random.Random, kinds: Sequence[str]) -> list[Message]:
    """No system prompt, or one of `kinds`: a short one, a fenced format example, or a rule
    list with pasted background notes (about 0.6–6k characters)."""
    kind = rng.choice(kinds)
    if kind == "none":
        return []
    if kind == "short":
        text = rng.choice(SYSTEM_SHORT)
    elif kind == "format":
        text = SYSTEM_FORMAT
    else:
        rules = rng.sample(SYSTEM_RULES, rng.randint(4, len(SYSTEM_RULES)))
        text = (
            rng.choice(SYSTEM_SHORT)
            + "\nRules:\n"
            + "\n".join(f"- {r}" for r in rules)
            + "\n\nBackground from the internal wiki:\n"
            + prose(rng, rng.randint(100, 5_000))
        )
    return [{"role": "system", "content": text}]


# --- chit-chat, thanks, factual ------------------------------------------------------------

TOPICS = ("cats", "programmers", "accountants", "the weather", "Mondays", "coffee", "trains")
CHITCHAT = (
    "hi!",
    "hey, how's it going?",
    "good morning :)",
    "what's up?",
    "Hallo, wie geht's?",
    "Bonjour ! Ça va ?",
    "ciao, come va?",
    "hola, ¿qué tal?",
    "olá, tudo bem?",
    "hoi, hoe gaat het?",
    "cześć, co słychać?",
    "tell me a joke about {topic}",
    "do you know a good pun about {topic}?",
    "I'm bored. Any ideas for a rainy {day}?",
    "what should I cook tonight with {food}?",
    "recommend a {genre} book for the holidays",
    "can you write a two-line poem about {topic}?",
    "are you a real person?",
)
THANKS = (
    "thanks!",
    "thank you, that worked",
    "perfect, thanks a lot",
    "Danke!",
    "merci beaucoup",
    "grazie mille!",
    "¡gracias!",
    "obrigado!",
    "dank je wel",
    "dzięki!",
    "ok great 👍",
    "cheers, that's exactly what I needed",
    "thx",
    "Super, vielen Dank für die Hilfe!",
    "thanks, you saved my afternoon",
    "that's it, thank you!",
)
FACTUAL = (
    "What is the capital of {country}?",
    "How many people live in {country}?",
    "Who wrote {book}?",
    "When was {book} first published?",
    "What's the difference between {pair}?",
    "How does {thing} work?",
    "Is {food} safe for dogs?",
    "What's the boiling point of water at {altitude} m?",
    "How long does it take to fly from {city} to {city2}?",
    "Why does {phenomenon}?",
    "What time zone is {city} in?",
    "Wie hoch ist die Zugspitze?",
    "Quelle est la population de {ville} ?",
    "¿Cuál es la moneda de {pais}?",
)
FACTUAL_FILLERS = {
    "country": ("Portugal", "Poland", "Canada", "Kenya", "Vietnam", "Chile", "Norway"),
    "book": ("Middlemarch", "The Name of the Rose", "Solaris", "Pedro Páramo", "Buddenbrooks"),
    "pair": (
        "a virus and a bacterium",
        "weather and climate",
        "TCP and UDP",
        "an ETF and a mutual fund",
        "baking soda and baking powder",
    ),
    "thing": ("a heat pump", "GPS", "a vaccine", "compound interest", "an induction hob"),
    "food": ("grapes", "cheese", "peanut butter", "avocado", "cooked rice"),
    "altitude": ("1500", "2400", "3800"),
    "city": ("Lisbon", "Warsaw", "Montreal", "Nairobi", "Hanoi", "Lyon", "Utrecht"),
    "city2": ("Tokyo", "Berlin", "Madrid", "Rome", "New York"),
    "ville": ("Lisbonne", "Varsovie", "Montréal", "Nairobi", "Lyon"),
    "pais": ("Noruega", "Polonia", "Chile", "Kenia", "Vietnam"),
    "phenomenon": (
        "the sky look blue",
        "bread go stale",
        "the moon look bigger near the horizon",
        "ice float on water",
    ),
}


def build_chitchat(rng: random.Random) -> Body:
    text = _pick(
        rng,
        CHITCHAT,
        topic=TOPICS,
        day=("Sunday", "afternoon", "weekend"),
        food=("leeks, eggs and feta", "leftover rice", "chickpeas and spinach"),
        genre=("crime", "sci-fi", "history", "poetry"),
    )
    kinds = ("none", "none", "short", "short", "format")
    return {"messages": [*_system(rng, kinds), _user(text)]}


def build_thanks(rng: random.Random) -> Body:
    return {"messages": [*_system(rng, ("none", "short")), _user(rng.choice(THANKS))]}


def build_factual(rng: random.Random) -> Body:
    text = _pick(rng, FACTUAL, **FACTUAL_FILLERS)
    return {"messages": [*_system(rng, ("none", "short", "rules", "format")), _user(text)]}


# --- prose for translations and summaries --------------------------------------------------

SUBJECTS = (
    "The platform team",
    "Finance",
    "Our largest customer in Lyon",
    "The support desk",
    "Marketing",
    "The data-protection officer",
    "Two of the night-shift operators",
    "The logistics partner",
    "The steering committee",
    "Legal",
    "The new regional manager",
    "Procurement",
    "The works council",
    "The Lisbon office",
)
VERBS = (
    "agreed to",
    "asked us to",
    "has not yet managed to",
    "proposed to",
    "will try to",
    "decided not to",
    "is still expected to",
    "promised to",
    "would prefer to",
    "offered to",
)
OBJECTS = (
    "move the quarterly review to the second week of {month}",
    "reduce onboarding time for new accounts",
    "replace the ageing ticketing system",
    "publish the revised travel policy",
    "renegotiate the warehouse lease",
    "hire two more analysts",
    "freeze non-essential spending until {month}",
    "prepare the figures for the board pack",
    "run a customer survey in {region}",
    "document the escalation path for outages",
    "close the Rotterdam depot",
    "shorten delivery times in {region}",
    "pilot a four-day week in the call centre",
)
TAILS = (
    "",
    "",
    " before the end of {month}",
    ", although nobody owns it yet",
    " once the budget is approved",
    ", which several people questioned",
    " as a matter of priority",
    " after the audit closes",
    " if the numbers allow it",
)
FACTS = (
    "Revenue in {region} was {pct}% {direction} on the previous quarter.",
    "{n} complaints were logged about late deliveries, {m} of them still open.",
    "Attendance at the {region} roadshow was lower than planned.",
    '"We cannot keep doing this by hand," said {name}.',
    "{name} will circulate the minutes by {month}.",
    "Staff turnover in {region} stayed at {pct}%, in line with last year.",
    "The invoice backlog fell from {n} to {m} items.",
    "{name} raised the question of weekend cover again.",
)
PROSE_FILLERS = {
    "month": ("January", "March", "June", "September", "November"),
    "region": ("Iberia", "the Benelux", "southern Germany", "Poland", "the Nordics"),
    "pct": ("2", "4.5", "7", "11", "13.2"),
    "direction": ("up", "down"),
    "n": ("41", "118", "260", "1,204"),
    "m": ("3", "9", "27", "56"),
    "name": ("Marta", "Jens", "Aurélie", "Giulia", "Tomasz", "Sanne", "Rui", "Priya"),
}
HEADINGS = ("Status", "Budget", "Open questions", "Customers", "Staffing", "Next steps")


# Everyday sentences that happen to hold a word the workload rules read as another task
# ("compile" as code, "translation" as a translation ask); at most one of each per text.
TRAPS = (
    "Finance will compile the figures for the board pack by Friday.",
    "Our translation agency raised its rates by 8% from {month}.",
)
TRAP_SHARE = 0.15  # of texts that get each trap sentence


def _sentence(rng: random.Random) -> str:
    if rng.random() < 0.4:
        return _pick(rng, FACTS, **PROSE_FILLERS)
    action = _pick(rng, OBJECTS, **PROSE_FILLERS) + _pick(rng, TAILS, **PROSE_FILLERS)
    return f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {action}."


def prose(rng: random.Random, chars: int) -> str:
    """Meeting-notes prose of at most `chars` characters and within a sentence (about 150
    characters) of it: paragraphs of 3–7 sentences, now and then under a heading."""
    sentences = [_sentence(rng) for _ in range(chars // 40 + 1)]
    for trap in TRAPS:
        if rng.random() < TRAP_SHARE:
            sentences.insert(rng.randrange(len(sentences)), _pick(rng, (trap,), **PROSE_FILLERS))
    text, paragraph_left = "", 0
    for sentence in sentences:
        if paragraph_left == 0:
            heading = f"## {rng.choice(HEADINGS)}\n" if rng.random() < 0.25 else ""
            piece, paragraph_left = ("\n\n" if text else "") + heading + sentence, rng.randint(3, 7)
        else:
            piece = " " + sentence
        if len(text) + len(piece) > chars:
            break
        text += piece
        paragraph_left -= 1
    return text


# --- translation ---------------------------------------------------------------------------

TRANSLATE_ASKS = (
    "Translate this into {lang_en}: {text}",
    "How do I say this in {lang_en}? {text}",
    "Can you translate the following email to {lang_en}, keeping the tone?\n\n{text}",
    "Übersetze bitte ins {lang_de}: {text}",
    "Peux-tu traduire en {lang_fr} : {text}",
    "Traduci in {lang_it}: {text}",
    "Traduce al {lang_es}, por favor: {text}",
    "Traduza para o {lang_pt}: {text}",
    "Vertaal naar het {lang_nl}: {text}",
    "Przetłumacz na {lang_pl}: {text}",
)
LANGUAGE_NAMES = {
    "lang_en": ("German", "French", "Italian", "Spanish", "Portuguese", "Dutch", "Polish"),
    "lang_de": ("Englische", "Französische", "Italienische", "Polnische"),
    "lang_fr": ("anglais", "allemand", "espagnol", "néerlandais"),
    "lang_it": ("inglese", "tedesco", "francese", "portoghese"),
    "lang_es": ("inglés", "alemán", "italiano", "polaco"),
    "lang_pt": ("inglês", "espanhol", "francês", "alemão"),
    "lang_nl": ("Engels", "Duits", "Frans"),
    "lang_pl": ("angielski", "niemiecki", "hiszpański"),
}
SHORT_TEXTS = (
    "Where is the nearest pharmacy?",
    "The meeting is moved to Thursday at 10.",
    "Your parcel will arrive tomorrow between 9 and 12.",
    "Please think carefully before you sign.",
    "We are sorry for the delay and will refund the shipping costs.",
    "Der Zug fällt heute leider aus.",
    "Il negozio è chiuso la domenica.",
    "Nous avons bien reçu votre paiement.",
    "El pedido ya está en camino.",
)


def build_translation(rng: random.Random) -> Body:
    if rng.random() < 0.6:
        text = f'"{rng.choice(SHORT_TEXTS)}"'
    else:  # an email or notes of 0.3–4k characters
        text = "Hi all,\n\n" + prose(rng, rng.randint(300, 4000)) + "\n\nBest regards,\nMarta"
    ask = _pick(rng, TRANSLATE_ASKS, text=(text,), **LANGUAGE_NAMES)
    return {"messages": [*_system(rng, ("none", "short")), _user(ask)]}


# --- summaries -----------------------------------------------------------------------------

SUMMARY_ASKS = (
    "Summarise this:\n\n{text}",
    "tl;dr please\n\n{text}",
    "Can you sum up the key points of these meeting notes?\n\n{text}",
    "Give me a 5-bullet summary of the following:\n\n{text}",
    "Fasse den folgenden Text in drei Sätzen zusammen:\n\n{text}",
    "Résume ce compte rendu en cinq points :\n\n{text}",
    "Riassumi questo documento:\n\n{text}",
    "Resume este texto en un párrafo:\n\n{text}",
    "Faça um resumo deste texto:\n\n{text}",
    "Vat deze notulen samen:\n\n{text}",
    "Streść ten tekst:\n\n{text}",
    "{text}\n\nWhat are the action items in the notes above?",
)


def _summary(low: int, high: int) -> Callable[[random.Random], Body]:
    """Summaries of pasted notes of [low, high) characters, log-uniform: short pastes are
    more common than long ones."""

    def build(rng: random.Random) -> Body:
        # the margins keep the whole request (ask, short system prompt) within [low, high)
        chars = math.exp(rng.uniform(math.log(low + 200), math.log(high - 300)))
        text = prose(rng, round(chars))
        ask = rng.choice(SUMMARY_ASKS).replace("{text}", text)
        return {"messages": [*_system(rng, ("none", "short")), _user(ask)]}

    return build


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
    return {"messages": [*_system(rng, ("none", "short", "rules")), _user(ask)]}


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
    trace = _pick(
        rng,
        TRACEBACKS,
        path=("app/main.py", "/srv/jobs/import_orders.py", "tasks/sync.py"),
        line=("12", "48", "131", "7"),
        line2=("3", "60", "210"),
        key=("sku", "user", "total"),
    )
    cmd = rng.choice(("the import script", "pytest", "npm start", "go run ./cmd/sync"))
    ask = rng.choice(TRACEBACK_ASKS).replace("{cmd}", cmd).replace("{trace}", trace)
    return {"messages": [*_system(rng, ("none", "short")), _user(ask)]}


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
    return {"messages": [*_system(rng, ("none", "short", "rules")), _user(ask)]}


# --- effort, reasoning_effort --------------------------------------------------------------

EFFORT_ASKS = (
    "Think hard about this: should we {decision}? List the risks.",
    "Explain step by step how {process}.",
    "What is the root cause of {symptom}?",
    "Do a deep dive into {topic}: where does it usually go wrong?",
    "Walk me through it step-by-step: how {process}?",
    "Can you think carefully and tell me whether we should {decision}?",
    "We need the root cause, not a workaround: {symptom}. Where do we start?",
)
EFFORT_FILLERS = {
    "decision": (
        "move our billing to a new provider",
        "split the monolith",
        "open an office in Lisbon",
        "switch the team to four-day weeks",
        "buy or lease the delivery vans",
    ),
    "process": (
        "a bill becomes law in the EU",
        "I make a sourdough starter",
        "DNS resolution works",
        "I reset my router",
        "mortgage interest is computed",
    ),
    "topic": (
        "our onboarding funnel",
        "the EU AI Act's duties for deployers",
        "how we price enterprise plans",
        "our incident reviews",
    ),
    "symptom": (
        "our churn spike in March",
        "the wifi dropping every evening",
        "customers abandoning the checkout page",
        "the sourdough not rising",
    ),
}


def build_effort(rng: random.Random) -> Body:
    text = _pick(rng, EFFORT_ASKS, **EFFORT_FILLERS)
    return {"messages": [*_system(rng, ("none", "short")), _user(text)]}


PUZZLES = (
    "A bat and a ball cost {total} in total. The bat costs 1.00 more than the ball. "
    "How much is the ball?",
    "Is {big} a prime number?",
    "Three friends split a {total}0 bill; one only had a salad for 9.50. What does each pay?",
    "If I invest {monthly} a month at 4% a year, what do I have after {years} years?",
    "Plan a {years}-day itinerary for {city} on a small budget.",
    "Which is bigger, 2^{exp} or 10^30?",
    "How many weekdays are there between 3 March and {date}?",
)
PUZZLE_FILLERS = {
    "total": ("1.10", "1.30", "2.50"),
    "big": ("2,147,483,647", "1,000,003", "91,001"),
    "monthly": ("150", "200", "450"),
    "years": ("3", "5", "15"),
    "exp": ("99", "100", "101"),
    "city": FACTUAL_FILLERS["city"],
    "date": ("21 April", "1 June", "30 September"),
}


def build_reasoning(rng: random.Random) -> Body:
    text = _pick(rng, PUZZLES, **PUZZLE_FILLERS)
    effort = rng.choice(("low", "medium", "high"))
    return {"messages": [_user(text)], "reasoning_effort": effort}


# --- tools, structured output, images ------------------------------------------------------

TOOL_SPECS = (
    ("get_weather", "Current weather for a city", {"city": "string"}),
    ("search_web", "Search the web", {"query": "string"}),
    ("get_order_status", "Status of an order", {"order_id": "string"}),
    ("create_calendar_event", "Create an event", {"title": "string", "start": "string"}),
    ("send_email", "Send an email", {"to": "string", "subject": "string", "body": "string"}),
    ("lookup_customer", "Find a customer by email", {"email": "string"}),
    ("convert_currency", "Convert an amount", {"amount": "number", "to": "string"}),
    ("book_table", "Book a restaurant table", {"restaurant": "string", "people": "integer"}),
    ("get_stock_price", "Latest price of a ticker", {"ticker": "string"}),
    ("create_ticket", "Open a support ticket", {"summary": "string", "priority": "string"}),
)
TOOL_ASKS = (
    "What's the weather in {city} tomorrow?",
    "Where is my order {order}?",
    "Book a table for {people} at Casa Nova tonight.",
    "How much is 250 EUR in {currency}?",
    "Put a meeting with {name} in my calendar for Friday 3pm.",
    "Email {name} that the report is late and open a ticket for it.",
    "Find the customer marta@example.com and tell me their last order.",
)


def _tools(rng: random.Random, count: int) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": description,
                "parameters": {
                    "type": "object",
                    "required": list(params),
                    "properties": {p: {"type": t} for p, t in params.items()},
                },
            },
        }
        for name, description, params in rng.sample(TOOL_SPECS, count)
    ]


def _tool_request(rng: random.Random, low: int, high: int) -> Body:
    tools = _tools(rng, rng.randint(low, high))
    text = _pick(
        rng,
        TOOL_ASKS,
        city=FACTUAL_FILLERS["city"],
        order=("A-10293", "778120"),
        people=("2", "4", "6"),
        currency=("USD", "PLN", "CHF"),
        name=PROSE_FILLERS["name"],
    )
    messages = [*_system(rng, ("none", "short", "rules")), _user(text)]
    if rng.random() < 0.4:  # the agent loop's second call: the tool result is back
        call_id = f"call_{rng.randrange(16**8):08x}"
        call = {"name": tools[0]["function"]["name"], "arguments": json.dumps({"query": text})}
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call_id, "type": "function", "function": call}],
            }
        )
        result = {"status": "ok", "items": [{"title": f"Result {i}"} for i in range(3)]}
        messages.append({"role": "tool", "tool_call_id": call_id, "content": json.dumps(result)})
    return {"messages": messages, "tools": tools}


SCHEMAS = (
    ("invoice", {"number": "string", "total": "number", "due": "string"}),
    ("contact", {"name": "string", "email": "string", "company": "string"}),
    ("sentiment", {"label": "string", "score": "number"}),
    ("ticket_triage", {"category": "string", "priority": "string", "summary": "string"}),
)
EXTRACT_ASKS = (
    "Extract the fields from this message:\n\n{text}",
    "Classify this review: {text}",
    "Pull out the contact details: {text}",
    "Triage this support request:\n{text}",
)
EXTRACT_TEXTS = (
    "Invoice 2025-118 from Atelier Rui, total 1,240.00 EUR, payable by 30 June.",
    "Loved the blender but the lid cracked after a week. Support was quick though.",
    "Hi, this is Sanne de Vries from Hollandia Foods, reach me at sanne@hollandia.example.",
    "Our dashboard shows no data since 8am and the export button does nothing.",
    "Rechnung Nr. 88/2025, Gesamtbetrag 312,50 EUR, fällig am 15. Juli.",
    "Terrible hotel, the room smelled of smoke and nobody at reception cared.",
    "Tomasz Nowak, CFO at Wisła Logistics, tomasz.nowak@wisla.example, +48 22 555 0101.",
    "I was charged twice for my March subscription, please refund one of them.",
)


def build_json_schema(rng: random.Random) -> Body:
    name, fields = rng.choice(SCHEMAS)
    text = rng.choice(EXTRACT_ASKS).replace("{text}", rng.choice(EXTRACT_TEXTS))
    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": list(fields),
        "properties": {f: {"type": t} for f, t in fields.items()},
    }
    if rng.random() < 0.2:  # JSON mode without a schema
        response_format: dict[str, Any] = {"type": "json_object"}
    else:
        response_format = {
            "type": "json_schema",
            "json_schema": {"name": name, "strict": True, "schema": schema},
        }
    return {
        "messages": [*_system(rng, ("none", "short")), _user(text)],
        "response_format": response_format,
    }


IMAGE_ASKS = (
    "What's in this picture?",
    "Can you read the text on this receipt?",
    "Which of these two sofas would fit a small living room?",
    "Describe this chart.",
    "Is this mushroom edible?",
    "What breed is this dog?",
    "Was steht auf dem Schild?",
)


def build_image(rng: random.Random) -> Body:
    parts: list[dict[str, Any]] = [{"type": "text", "text": rng.choice(IMAGE_ASKS)}]
    for i in range(rng.choice((1, 1, 1, 2, 3))):
        url = (
            f"https://images.example.com/u/{rng.randrange(10**6)}-{i}.jpg"
            if rng.random() < 0.6
            else "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAC0"
        )
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return {"messages": [*_system(rng, ("none", "short")), _user(parts)]}


# --- threads -------------------------------------------------------------------------------

THREADS = (
    (
        "Can you help me plan a birthday party for my daughter?",
        "She turns 8.",
        "Around 12 kids, mostly from her class.",
        "What games would work indoors?",
        "And what about food for the parents?",
        "Could you make it cheaper?",
    ),
    (
        "I need a cover letter for a job as a project coordinator.",
        "Make it less formal.",
        "Shorter please, max 150 words.",
        "Now a version in German.",
        "Can you mention that I speak Portuguese too?",
    ),
    (
        "What are good stretches for lower back pain?",
        "How often should I do them?",
        "Is it ok to do them before running?",
        "And after a long flight?",
    ),
    (
        "Which SQL index would speed up this query?\n```sql\nSELECT * FROM orders "
        "WHERE customer_id = 42 ORDER BY created_at DESC;\n```",
        "Would a partial index help?",
        "How do I check that Postgres actually uses it?",
    ),
    (
        "We're going to {city} in May, what should we see?",
        "We have 3 days and two kids.",
        "Which of these is free?",
        "What about rainy-day options?",
        "Where should we stay?",
        "Ok, make me a day-by-day plan.",
    ),
    (
        "My landlord wants to raise the rent by 12%, is that allowed?",
        "I live in {city}.",
        "The contract is from 2021.",
        "How should I word my reply?",
    ),
)
REPLIES = (  # topic-neutral, so that any reply fits any thread
    "Sure! Here is a first draft. Tell me what to change and I'll refine it.",
    "Here is a revised version. I kept the structure and changed what you asked for.",
    "Good question. In short: it depends on a few things, mainly time and budget. "
    "Here are the options, from the simplest to the most thorough.",
    "Here you go:\n\n1. Start with the basics\n2. Then the details\n3. Then check the result",
    "Yes, that works. One caveat: double-check it against your own situation first.",
)


def build_thread(rng: random.Random) -> Body:
    """A conversation of 2–12 messages (a system prompt included): the first turns of one
    scripted thread with assistant replies between them, now and then ended by a thanks."""
    messages = _system(rng, ("none", "short", "short", "rules", "format"))
    script = rng.choice(THREADS)
    turns = rng.randint(1, len(script))
    city = rng.choice(FACTUAL_FILLERS["city"])
    for i, turn in enumerate(script[:turns]):
        if i:
            messages.append({"role": "assistant", "content": rng.choice(REPLIES)})
        messages.append(_user(turn.replace("{city}", city)))
    if len(messages) < 2 or (len(messages) <= 10 and rng.random() < 0.3):
        messages.append({"role": "assistant", "content": rng.choice(REPLIES)})
        messages.append(_user(rng.choice(THANKS)))
    return {"messages": messages}


# --- the mix -------------------------------------------------------------------------------

TEMPLATES: tuple[Template, ...] = (
    Template("chitchat", 12, 80, build_chitchat),
    Template("thanks", 8, 30, build_thanks),
    Template("factual", 14, 250, build_factual),
    Template("translation", 10, 300, build_translation),
    Template("summary_short", 5, 250, _summary(400, 2_000)),
    Template("summary_2k", 5, 350, _summary(2_000, 8_000)),
    Template("summary_8k", 4, 500, _summary(8_000, 32_000)),
    Template("summary_32k", 2, 700, _summary(32_000, 60_000)),
    Template("code", 9, 600, build_code),
    Template("traceback", 5, 500, build_traceback),
    Template("diff", 4, 700, build_diff),
    Template("effort", 5, 900, build_effort),
    Template("tools_few", 7, 150, lambda rng: _tool_request(rng, 1, 4)),
    Template("tools_many", 3, 200, lambda rng: _tool_request(rng, 5, 7)),
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
