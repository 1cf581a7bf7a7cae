"""A word's form for matching, per language: case folded, elision cut, stop words out, stemmed, accents folded.

Stemmers are Snowball's (PyStemmer: the algorithms PostgreSQL's text search uses), for each language that has one.
Stop words are stopwords-iso's list for the language (stopwordsiso) plus a short English list of words that say
nothing in a headline, which applies to every language (English words turn up in headlines of any language).
Accents are folded after stemming, since stemmers rely on them ("élections" → "élect" → "elect"), and only in
scripts where a mark is an accent: Latin, Greek (capitals drop their accents: "ΕΚΛΟΓΕΣ" is "εκλογές"), Cyrillic
("ё" is often written "е"), Hebrew and Arabic (vowel points). Devanagari, Thai and the rest keep their marks (there
they are vowels), and so does Vietnamese (its marks are tones: folding them joins different words).
"""

from __future__ import annotations

import functools
import threading
import unicodedata

import Stemmer
import stopwordsiso

# ISO 639-1 code -> Snowball algorithm, for every language PyStemmer ships one for
STEMMERS = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "cs": "czech", "da": "danish", "nl": "dutch",
    "en": "english", "eo": "esperanto", "et": "estonian", "fi": "finnish", "fr": "french", "de": "german",
    "el": "greek", "hi": "hindi", "hu": "hungarian", "id": "indonesian", "ms": "indonesian", "ga": "irish",
    "it": "italian", "lt": "lithuanian", "ne": "nepali", "no": "norwegian", "fa": "persian", "pl": "polish",
    "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian", "es": "spanish", "sv": "swedish",
    "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}  # fmt: skip
UNFOLDED = frozenset({"vi"})  # languages whose accents are not folded
ELIDING = frozenset({"fr", "it", "ca"})  # "l'armée", "dell'Europa": the article before the apostrophe goes
ELISION_CHARS = 4  # the longest elided prefix ("dell", "nell", "sull")

_NEWS_STOPWORDS = """
a about above after again against all also am an and any are as at be been before being below between both but by
can could did do does doing down during each few for from further had has have having he her here hers him his how
i if in into is it its itself just me more most my new no nor not now of off on once only or other our out over own
says said same she should so some such than that the their them then there these they this those through to too
under until up very via was we were what when where which while who whom why will with would you your
report reports update updates live video photos watch
"""
NEWS_STOPWORDS = frozenset(_NEWS_STOPWORDS.split())
FOLDED_BELOW = 0x0900  # Latin, Greek, Cyrillic, Armenian, Hebrew, Arabic and their marks sit below Devanagari
FOLDED_EXTENDED = (0x1E00, 0x1FFF)  # Latin Extended Additional and Greek Extended

_lock = threading.Lock()  # a PyStemmer stemmer is not safe to share between threads
_stemmers: dict[str, Stemmer.Stemmer] = {}


def fold_accents(word: str) -> str:
    """The word without the combining marks of the scripts above (others keep theirs)."""
    if word.isascii():
        return word
    kept: list[str] = []
    for char in unicodedata.normalize("NFD", word):
        if unicodedata.combining(char) and kept and _folds(kept[-1]):
            continue
        kept.append(char)
    return unicodedata.normalize("NFC", "".join(kept))


def _folds(base: str) -> bool:
    point = ord(base)
    return point < FOLDED_BELOW or FOLDED_EXTENDED[0] <= point <= FOLDED_EXTENDED[1]


@functools.cache
def stopwords(language: str | None) -> frozenset[str]:
    """The language's stop words and the English ones, case and accents folded as words are."""
    listed = stopwordsiso.stopwords(language) if language and language != "en" else set()
    fold = (lambda w: w) if language in UNFOLDED else fold_accents
    return frozenset(fold(w.casefold()) for w in listed | NEWS_STOPWORDS)


def stem(word: str, language: str | None) -> str:
    algorithm = STEMMERS.get(language or "")
    if algorithm is None:
        return word
    with _lock:
        if (stemmer := _stemmers.get(algorithm)) is None:
            stemmer = _stemmers[algorithm] = Stemmer.Stemmer(algorithm)
        return str(stemmer.stemWord(word))


@functools.lru_cache(maxsize=1 << 17)  # headline words repeat: each is formed once
def word_form(word: str, language: str | None) -> str:
    """The form a word (as written) matches by, or "" for a stop word."""
    word = word.casefold().replace("\u2019", "'")
    if language in ELIDING and 0 < word.find("'") <= ELISION_CHARS:
        word = word[word.index("'") + 1 :]
    if word.endswith("'s"):
        word = word[:-2]
    fold = (lambda w: w) if language in UNFOLDED else fold_accents
    if fold(word) in stopwords(language):
        return ""
    return fold(stem(word, language))
