"""Terms of a headline (and summary) for story matching, pure, in the article's language: words in their matching
form (app/text/word_forms.py), text without spaces as character n-grams (app/text/segments.py), names weighted."""

from __future__ import annotations

import functools
from collections import defaultdict

from app.text.segments import segments
from app.text.word_forms import stopwords, word_form

# An article whose language is not known (too short to detect, no declared language) is taken as English, as search
# takes a query: it is most of the corpus, and its words should meet the English ones of the same story.
DEFAULT_LANGUAGE = "en"
# Languages whose headlines are cut into character n-grams rather than words (app/text/segments.py): Chinese,
# Japanese kanji and Korean Hangul as bigrams, Thai, Lao, Khmer and Myanmar as trigrams.
GRAM_LANGUAGES = frozenset({"zh", "ja", "ko", "th", "lo", "km", "my"})
NAME_WEIGHT = 2.0  # a capitalised word inside a headline is usually a name: strong evidence of the story
SUMMARY_WEIGHT = 0.5
MIN_TITLE_WORD, MIN_SUMMARY_WORD = 2, 3  # shorter words say little (n-grams of unspaced text are kept whole)


def terms(title: str, summary: str = "", language: str | None = None) -> dict[str, float]:
    """Weighted terms: headline words, names (capitalised, not sentence-initial) doubled, summary words halved."""
    language = language or DEFAULT_LANGUAGE
    stop = stopwords(language)  # n-grams that are stop words ("我们", "没有") go too
    counts: dict[str, float] = defaultdict(float)
    for index, (kind, raw) in enumerate(segments(title)):
        if kind == "gram":
            if raw not in stop:
                counts[raw] += 1.0
        else:
            weight = NAME_WEIGHT if index > 0 and raw[:1].isupper() else 1.0
            for word in _forms(raw, language, MIN_TITLE_WORD):
                counts[word] += weight
    for kind, raw in segments(summary):
        if kind == "gram":
            if raw not in stop:
                counts[raw] += SUMMARY_WEIGHT
        else:
            for word in _forms(raw, language, MIN_SUMMARY_WORD):
                counts[word] += SUMMARY_WEIGHT
    return dict(counts)


@functools.lru_cache(maxsize=1 << 17)  # words repeat across headlines: each is cut, formed and measured once
def _forms(raw: str, language: str, shortest: int) -> tuple[str, ...]:
    """The matching forms of a word as written (of each part of a compound), those shorter than `shortest` left out."""
    return tuple(word for part in _parts(raw) if len(word := word_form(part, language)) >= shortest)


def _parts(word: str) -> list[str]:
    """A hyphenated compound of names or words ("Fannie-Freddie", "Chiquita-Fyffes") is its parts: each is how
    the other headlines of the story write it. A part with a digit keeps the compound whole ("F-15C", "COVID-19")."""
    if "-" not in word or any(char.isdigit() for char in word):
        return [word]
    return word.split("-")
