"""The conversational templates of the mixed sample (bench/sample_requests.py): chit-chat,
thanks, factual questions, effort keywords, puzzles with `reasoning_effort`, images, and
threads of several turns."""

from __future__ import annotations

import random
from typing import Any

from bench.sample_text import Body, pick, system, user

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
    text = pick(
        rng,
        CHITCHAT,
        topic=TOPICS,
        day=("Sunday", "afternoon", "weekend"),
        food=("leeks, eggs and feta", "leftover rice", "chickpeas and spinach"),
        genre=("crime", "sci-fi", "history", "poetry"),
    )
    kinds = ("none", "none", "short", "short", "format")
    return {"messages": [*system(rng, kinds), user(text)]}


def build_thanks(rng: random.Random) -> Body:
    return {"messages": [*system(rng, ("none", "short")), user(rng.choice(THANKS))]}


def build_factual(rng: random.Random) -> Body:
    text = pick(rng, FACTUAL, **FACTUAL_FILLERS)
    return {"messages": [*system(rng, ("none", "short", "rules", "format")), user(text)]}


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
    text = pick(rng, EFFORT_ASKS, **EFFORT_FILLERS)
    return {"messages": [*system(rng, ("none", "short")), user(text)]}


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
    text = pick(rng, PUZZLES, **PUZZLE_FILLERS)
    effort = rng.choice(("low", "medium", "high"))
    return {"messages": [user(text)], "reasoning_effort": effort}


# --- images --------------------------------------------------------------------------------

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
    return {"messages": [*system(rng, ("none", "short")), user(parts)]}


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
    messages = system(rng, ("none", "short", "short", "rules", "format"))
    script = rng.choice(THREADS)
    turns = rng.randint(1, len(script))
    city = rng.choice(FACTUAL_FILLERS["city"])
    for i, turn in enumerate(script[:turns]):
        if i:
            messages.append({"role": "assistant", "content": rng.choice(REPLIES)})
        messages.append(user(turn.replace("{city}", city)))
    if len(messages) < 2 or (len(messages) <= 10 and rng.random() < 0.3):
        messages.append({"role": "assistant", "content": rng.choice(REPLIES)})
        messages.append(user(rng.choice(THANKS)))
    return {"messages": messages}
