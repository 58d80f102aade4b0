"""The local, deterministic request readers behind SPEC D-14 and R-AUTO-2: the stopword
language detector, the workload classifier, and the input-token estimate."""

import math

import pytest

from routing.engine.language import ISO_639_1, LANGUAGES, detect
from routing.engine.types import TASKS
from routing.engine.workload import (
    classify,
    embedding_tokens,
    estimate_chat_tokens,
    has_image,
    last_user_text,
)

DETECT = [
    ("en", "Can you explain how the garbage collector works in this version of the runtime?"),
    ("en", "Summarize the following meeting notes in three bullet points for the team."),
    ("en", "What is the capital of Australia and why is it not Sydney?"),
    ("de", "Kannst du mir bitte erklären, wie die Speicherverwaltung in diesem Programm "
           "funktioniert?"),
    ("de", "Ich habe eine Frage zu meiner Rechnung, die ich letzte Woche bekommen habe."),
    ("de", "Fasse bitte den folgenden Artikel in drei Sätzen zusammen."),
    ("fr", "Pouvez-vous m'expliquer comment fonctionne la gestion de la mémoire dans ce "
           "programme ?"),
    ("fr", "Je voudrais réserver une table pour deux personnes ce soir."),
    ("fr", "Résume cet article en trois phrases, s'il te plaît."),
    ("it", "Puoi spiegarmi come funziona la gestione della memoria in questo programma?"),
    ("it", "Vorrei prenotare un tavolo per due persone questa sera, è possibile?"),
    ("it", "Qual è la capitale dell'Australia e perché non è Sydney?"),
    ("es", "¿Puedes explicarme cómo funciona la gestión de memoria en este programa?"),
    ("es", "Quisiera reservar una mesa para dos personas esta noche, por favor."),
    ("es", "El contrato no incluye los gastos de envío y la factura está mal."),
    ("pt", "Você pode me explicar como funciona o gerenciamento de memória neste programa?"),
    ("pt", "Eu gostaria de reservar uma mesa para duas pessoas hoje à noite."),
    ("pt", "O contrato não inclui as despesas de envio e a fatura está errada."),
    ("nl", "Kun je mij uitleggen hoe het geheugenbeheer in dit programma werkt?"),
    ("nl", "Ik wil graag een tafel reserveren voor twee personen vanavond."),
    ("nl", "Vat dit artikel samen in drie zinnen, alsjeblieft."),
    ("pl", "Czy możesz mi wyjaśnić, jak działa zarządzanie pamięcią w tym programie?"),
    ("pl", "Chciałbym zarezerwować stolik dla dwóch osób na dzisiejszy wieczór."),
    ("pl", "Napisz uprzejmy e-mail do mojego właściciela mieszkania w sprawie ogrzewania."),
    # Too short, too ambiguous, code, or not one of the eight languages: no guess.
    (None, "Hello"),
    (None, "Thanks!"),
    (None, "ok cool"),
    (None, "la casa de papel"),
    (None, "Merci beaucoup mon ami"),
    (None, "Привет, как дела? Что нового у тебя сегодня?"),
    (None, "```python\ndef f(x):\n    return x if x else None\n```"),
    (None, ""),
]  # fmt: skip


@pytest.mark.parametrize(("expected", "text"), DETECT)
def test_d_14_language_is_detected_from_stopwords(expected, text):
    assert detect(text) == expected


def test_d_14_detector_languages_are_iso_639_1_codes():
    assert set(LANGUAGES) == {"en", "de", "fr", "it", "es", "pt", "nl", "pl"}
    assert set(LANGUAGES) <= ISO_639_1
    assert len(ISO_639_1) == 184


def user(text):
    return {"messages": [{"role": "user", "content": text}]}


CLASSIFY = [
    ("tools declared", user("What's the weather in Oslo?") | {"tools": [{"type": "function"}]},
     "tool_use"),
    ("tools beat code", user("```py\nprint(1)\n```") | {"tools": [{"type": "function"}]},
     "tool_use"),
    ("json schema", user("List three fruits.") | {"response_format": {"type": "json_schema"}},
     "structured_output"),
    ("json object", user("List three fruits.") | {"response_format": {"type": "json_object"}},
     "structured_output"),
    ("responses text.format", user("List three fruits.")
     | {"text": {"format": {"type": "json_schema"}}}, "structured_output"),
    ("plain response format", user("List three fruits.") | {"response_format": {"type": "text"}},
     "general"),
    ("fenced code", user("Why is this slow?\n```sql\nSELECT * FROM t\n```"), "code"),
    ("python traceback", user('Traceback (most recent call last):\n  File "a.py", line 3'),
     "code"),
    ("error line", user("I get TypeError: undefined is not a function in the browser"), "code"),
    ("a def line", user("def total(xs):\n    return sum(xs)\nis this right?"), "code"),
    ("a class line", user("class Cart:\n    pass\nhow do I add items?"), "code"),
    ("a git diff", user("diff --git a/x b/x\n+new line"), "code"),
    ("language named", user("Write a Python function that reverses a list."), "code"),
    ("german code request", user("Schreibe eine Python-Funktion, die Primzahlen findet."),
     "code"),
    ("code beats translation", user("Translate this JavaScript snippet to TypeScript."), "code"),
    ("translate en", user("Translate 'good morning' into Japanese."), "translation"),
    ("translate de", user("Übersetze den folgenden Absatz ins Französische."), "translation"),
    ("translate it", user("Traduci questa frase in inglese."), "translation"),
    ("translate fr", user("Traduis ce paragraphe en allemand."), "translation"),
    ("translate es", user("Traduce este texto al portugués."), "translation"),
    ("translate pt", user("Traduza esta frase para o espanhol."), "translation"),
    ("translate nl", user("Vertaal deze zin naar het Engels."), "translation"),
    ("translate pl", user("Przetłumacz to zdanie na angielski."), "translation"),
    ("summarize", user("Summarize this article in three bullet points."), "summarisation"),
    ("summarise", user("Please summarise the report below."), "summarisation"),
    ("tl;dr", user("tl;dr of the thread above?"), "summarisation"),
    ("zusammenfassung", user("Schreib mir eine Zusammenfassung des Protokolls."),
     "summarisation"),
    ("fasse zusammen", user("Fasse den Text bitte kurz zusammen."), "summarisation"),
    ("riassumi", user("Riassumi questo documento in poche righe."), "summarisation"),
    ("résume", user("Résume cet article en trois phrases."), "summarisation"),
    ("resumen", user("Hazme un resumen de esta reunión."), "summarisation"),
    ("vat samen", user("Vat dit verslag samen in vijf zinnen."), "summarisation"),
    ("streść", user("Streść ten artykuł w trzech zdaniach."), "summarisation"),
    ("step by step", user("Solve 3x + 5 = 20 step by step."), "reasoning"),
    ("prove", user("Prove that the square root of 2 is irrational."), "reasoning"),
    ("why does", user("Why does ice float on water?"), "reasoning"),
    ("schritt für schritt", user("Erkläre Schritt für Schritt, wie ein Kredit funktioniert."),
     "reasoning"),
    ("paso a paso", user("Explícame paso a paso cómo resolver la ecuación."), "reasoning"),
    ("general", user("Write a haiku about spring rain."), "general"),
    ("improve is not prove", user("How can I improve my CV?"), "general"),
    ("resume is not a summary", user("Please resume the story where you stopped."), "general"),
    ("math function is not code", user("What is the derivative of the function x squared?"),
     "general"),
    ("no messages", {}, "general"),
    ("only the last user message counts",
     {"messages": [{"role": "user", "content": "```js\nlet a = 1\n```"},
                   {"role": "assistant", "content": "Looks fine."},
                   {"role": "user", "content": "Thanks! Now write a limerick about cats."}]},
     "general"),
    ("text parts are read",
     {"messages": [{"role": "user", "content": [{"type": "text", "text": "Translate to Dutch:"},
                                                {"type": "text", "text": "good night"}]}]},
     "translation"),
    ("responses input string", {"input": "Summarize the attached memo."}, "summarisation"),
]  # fmt: skip


@pytest.mark.parametrize(("_case", "body", "expected"), CLASSIFY)
def test_d_14_r_auto_2_workload_classifier(_case, body, expected):
    assert classify(body) == expected
    assert expected in TASKS


def test_d_14_last_user_text_joins_text_parts_and_skips_other_roles():
    body = {"messages": [{"role": "user", "content": "first"},
                         {"role": "user", "content": [{"type": "text", "text": "a"},
                                                      {"type": "image_url", "image_url": {}},
                                                      {"type": "text", "text": "b"}]},
                         {"role": "assistant", "content": "reply"}]}  # fmt: skip
    assert last_user_text(body) == "a\nb"


def test_r_dec_2_input_tokens_count_text_messages_and_images():
    # given: 40 + 2 + 9 + 19 characters of text over four messages, one image
    body = {"messages": [
        {"role": "system", "content": "s" * 40},
        {"role": "user", "content": [{"type": "text", "text": "hi"},
                                     {"type": "image_url", "image_url": {"url": "data:x"}}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"type": "function", "function": {"name": "f", "arguments": '{"q":"x"}'}}]},
        {"role": "tool", "tool_call_id": "1", "content": "t" * 19},
    ]}  # fmt: skip
    # then
    assert estimate_chat_tokens(body) == math.ceil(70 / 4) + 4 * 4 + 765
    assert has_image(body) is True


def test_r_dec_2_input_tokens_of_a_responses_body():
    body = {"instructions": "i" * 8, "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "u" * 8},
                                     {"type": "input_image", "image_url": "https://x.test/a.png"}]},
        {"type": "function_call_output", "call_id": "c1", "output": "o" * 4},
    ]}  # fmt: skip
    assert estimate_chat_tokens(body) == math.ceil(20 / 4) + 3 * 4 + 765


@pytest.mark.parametrize(
    ("value", "expected"),
    [("abcdefgh", 2), ("abcdefghi", 3), (["abcd", "ab"], 2), ([1, 2, 3], 3),
     ([[1, 2], [3]], 3), (None, 0)],
)  # fmt: skip
def test_r_api_1_embedding_input_tokens(value, expected):
    assert embedding_tokens({"input": value}) == expected
