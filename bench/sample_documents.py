"""The templates of the mixed sample (bench/sample_requests.py) around pasted text:
translations of a sentence or an email, and summaries of notes from a few hundred
characters to 60k."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from bench.sample_text import Body, pick, prose, system, user

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
    ask = pick(rng, TRANSLATE_ASKS, text=(text,), **LANGUAGE_NAMES)
    return {"messages": [*system(rng, ("none", "short")), user(ask)]}


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


def build_summary(low: int, high: int) -> Callable[[random.Random], Body]:
    """Summaries of pasted notes of [low, high) characters, log-uniform: short pastes are
    more common than long ones."""

    def build(rng: random.Random) -> Body:
        # the margins keep the whole request (ask, short system prompt) within [low, high)
        chars = math.exp(rng.uniform(math.log(low + 200), math.log(high - 300)))
        text = prose(rng, round(chars))
        ask = rng.choice(SUMMARY_ASKS).replace("{text}", text)
        return {"messages": [*system(rng, ("none", "short")), user(ask)]}

    return build
