"""The building blocks every request template of the mixed sample (bench/sample_requests.py)
shares: filling a wording from lists, the user message, the optional system prompt, and
`prose`, meeting notes of any length that translations, summaries and long system prompts
paste in."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

Body = dict[str, Any]
Message = dict[str, Any]


def pick(rng: random.Random, options: Sequence[str], **fillers: Sequence[str]) -> str:
    """One of `options` with each `{name}` replaced by a random entry of `fillers[name]`."""
    text = rng.choice(options)
    return text.format(**{name: rng.choice(values) for name, values in fillers.items()})


def user(text: str | list[dict[str, Any]]) -> Message:
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


def system(rng: random.Random, kinds: Sequence[str]) -> list[Message]:
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


# --- prose: meeting notes ------------------------------------------------------------------

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
        return pick(rng, FACTS, **PROSE_FILLERS)
    action = pick(rng, OBJECTS, **PROSE_FILLERS) + pick(rng, TAILS, **PROSE_FILLERS)
    return f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {action}."


def prose(rng: random.Random, chars: int) -> str:
    """Meeting-notes prose of at most `chars` characters and within a sentence (about 150
    characters) of it: paragraphs of 3–7 sentences, now and then under a heading."""
    sentences = [_sentence(rng) for _ in range(chars // 40 + 1)]
    for trap in TRAPS:
        if rng.random() < TRAP_SHARE:
            sentences.insert(rng.randrange(len(sentences)), pick(rng, (trap,), **PROSE_FILLERS))
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
