"""Language of a request (SPEC D-14): a stopword-frequency detector for en, de, fr, it, es,
pt, nl and pl, plus the ISO 639-1 code list that `routing.language` is checked against.
Pure and table-driven: no model, no download, the same text always gives the same answer.

How it scores: every word found in a language's stopword list adds 1 / (number of listed
languages that share the word), so `het` counts fully for Dutch while `de` is split four ways;
letters only some languages use (ß, ñ, ł, ã, …) add a little on top. The best language wins
only with enough evidence and a clear lead over the runner-up; otherwise the answer is None
(short greetings, mixed text, code, or a language not listed).
"""

from __future__ import annotations

import re
from collections import defaultdict

# ISO 639-1: the two-letter codes `routing.language` may name (bh kept for old clients).
_ISO_639_1_CODES = (
    "aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu "
    "cv cy da de dv dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi "
    "ho hr ht hu hy hz ia id ie ig ii ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks "
    "ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl "
    "nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl "
    "sm sn so sq sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve "
    "vi vo wa wo xh yi yo za zh zu"
)
ISO_639_1 = frozenset(_ISO_639_1_CODES.split())

# Function words, lowercase. Elided forms are split at the apostrophe by the tokenizer, so
# French `c'est` gives `c` + `est` and English `don't` gives `don` + `t`.
_STOPWORDS: dict[str, str] = {
    "en": (
        "the and of to is are was were be been it that this these those with for on as at by "
        "from have has had not but or what which who how when where you your we our they "
        "their he she his her i my me can could would should will do does did an a there "
        "about into than then if so please in t s ll m re ve don doesn isn"
    ),
    "de": (
        "der die das und ist nicht ein eine einen einem einer ich du sie er es wir ihr mit "
        "auf für von zu den dem des im auch sich wie was warum wenn aber oder noch nur bei "
        "nach über kann können wird werden sind hat haben mir mich dir bitte diese dieser "
        "dieses uns kein keine schon sehr hier dass in so kannst könnte möchte danke hallo "
        "zwei drei schreibe erkläre"
    ),
    "fr": (
        "le la les un une des du de et est sont ce cette ces que qui quoi dans pour pas ne "
        "sur avec il elle ils elles nous vous je tu on au aux mais ou où comment pourquoi "
        "très plus se sa son ses leur y en été être avoir fait peut était cela ça c d l j qu "
        "n s es voudrais peux pouvez merci bonjour cet plaît deux trois écris explique"
    ),
    "it": (
        "il lo la i gli le un uno una di da in con su per tra fra e è che non del della dei "
        "delle al alla nel nella sono come perché questo questa quello mi ti si ci anche ma o "
        "più molto cosa sei ha hanno essere io tu lui lei noi voi loro dell all sull nell l d "
        "vorrei puoi può grazie ciao favore due tre scrivi spiega"
    ),
    "es": (
        "el la los las un una unos unas de del y que en es son por para con no se lo le les "
        "su sus al como más pero o muy este esta esto ese esa qué cómo cuál está están hay yo "
        "tú él ella nosotros ustedes me te mi ser fue también sobre entre cuando donde porque "
        "a quiero quisiera necesito tengo puedes puede hacer gracias hola favor dos tres "
        "escribe explica"
    ),
    "pt": (
        "o a os as um uma uns umas de do da dos das e é que em no na nos nas por para com não "
        "se ao aos à como mais mas ou muito este esta isso isto esse essa eu você ele ela nós "
        "eles elas seu sua são está foi ser também quando onde porque qual me te lhe há tem "
        "pelo pela quero gostaria preciso tenho pode podes fazer obrigado obrigada olá favor "
        "duas três escreva explique"
    ),
    "nl": (
        "de het een en van in is dat die niet op te met voor zijn er aan om ook als maar bij "
        "of naar door dan nog wat hoe waarom wordt worden kan kunnen je jij ik wij we ze hij "
        "zij mijn jouw uw onze deze dit zo al geen heeft hebben was waren u wel moet mij ons "
        "over tot uit veel graag wil kun kunt bedankt hallo alsjeblieft alstublieft twee drie "
        "schrijf leg"
    ),
    "pl": (
        "i w z na do nie się to że jest jak co a o od po za dla czy ale tak ten ta te tego "
        "tej tym jego jej ich oraz lub przez przy być są może już tylko jeszcze bardzo mnie "
        "mi ja ty on ona my wy oni gdzie kiedy dlaczego proszę który która które ze we sobie "
        "jako był była było chciałbym chciałabym możesz dziękuję cześć dwa trzy napisz "
        "wyjaśnij mój moja moje mojego"
    ),
}
LANGUAGES = tuple(_STOPWORDS)

# Letters that only some of the eight languages use; each occurrence adds a quarter point,
# shared like the stopwords.
_LETTERS: dict[str, str] = {
    "de": "äöüß",
    "fr": "èêàçùœâîôûëï",
    "it": "òìèàù",
    "es": "ñ¿¡áíóú",
    "pt": "ãõçâêôáíóú",
    "pl": "ąęłśćźżńó",
}
_LETTER_POINTS = 0.25

# Evidence needed: at least this many points for the winner, and a lead of at least this
# fraction of its score over the runner-up (es/pt and fr/it share many function words).
MIN_SCORE = 1.5
MIN_LEAD = 0.3
MIN_WORDS = 3


def _weights(table: dict[str, str], *, letters: bool) -> dict[str, dict[str, float]]:
    owners: dict[str, list[str]] = defaultdict(list)
    for lang, items in table.items():
        for item in set(items) if letters else set(items.split()):
            owners[item].append(lang)
    return {item: {lang: 1.0 / len(langs) for lang in langs} for item, langs in owners.items()}


_WORD_WEIGHTS = _weights(_STOPWORDS, letters=False)
_LETTER_WEIGHTS = _weights(_LETTERS, letters=True)
_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.DOTALL)
_WORD = re.compile(r"[^\W\d_]+")


def score(text: str) -> dict[str, float]:
    """Points per language for `text` (languages with no evidence are left out)."""
    prose = _CODE.sub(" ", text).lower()
    points: dict[str, float] = defaultdict(float)
    for word in _WORD.findall(prose):
        for lang, weight in _WORD_WEIGHTS.get(word, {}).items():
            points[lang] += weight
    for char in prose:
        for lang, weight in _LETTER_WEIGHTS.get(char, {}).items():
            points[lang] += weight * _LETTER_POINTS
    return dict(points)


def detect(text: str) -> str | None:
    """The ISO 639-1 code of `text` among LANGUAGES, or None when the evidence is too thin
    (fewer than MIN_WORDS words, fewer than MIN_SCORE points) or too close to call."""
    if len(_WORD.findall(_CODE.sub(" ", text))) < MIN_WORDS:
        return None
    ranked = sorted(score(text).items(), key=lambda item: (-item[1], item[0]))
    if not ranked or ranked[0][1] < MIN_SCORE:
        return None
    best_lang, best = ranked[0]
    runner_up = ranked[1][1] if len(ranked) > 1 else 0.0
    if best - runner_up < MIN_LEAD * best:
        return None
    return best_lang


def is_iso_639_1(code: str) -> bool:
    return code in ISO_639_1
