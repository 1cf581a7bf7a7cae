"""Unicode word segmentation: words where scripts put spaces, character n-grams where they don't.

Text is NFKC-normalised first (full-width Latin and digits, half-width katakana and ligatures become their plain
forms), and the invisible characters that may sit inside a word are removed before: the soft hyphen (`&shy;`, common
in German feeds), zero-width space, non-joiner and joiner, word joiner and byte-order mark, so "Mer&shy;kel" is
"Merkel" and a word reads the same with or without them. Words are runs of letters, digits and combining marks (a
Devanagari vowel sign or an Arabic haraka belongs to its word), joined by an inner apostrophe, hyphen or dot ("U.S.",
"F-15C", "aujourd'hui").
Scripts written without spaces are cut as search cuts CJK text (migration 0010), by script: Han ideographs and
Hangul into overlapping character bigrams (a one-character run stays whole), katakana runs (names and loanwords)
whole, hiragana dropped (in a headline it is particles and inflections), and Thai, Lao, Khmer and Myanmar runs into
character trigrams (their letters are an alphabet, so a bigram says little).
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Iterator
from typing import Literal

Kind = Literal["word", "gram"]


def _mark_ranges() -> str:
    """Combining marks of the Basic Multilingual Plane, as a regex character-class body (\\w leaves them out)."""
    marks = [c for c in range(0x300, 0x10000) if unicodedata.category(chr(c)) in ("Mn", "Mc", "Me")]
    ranges, start = [], marks[0]
    for previous, current in zip(marks, [*marks[1:], sys.maxunicode + 2], strict=True):
        if current != previous + 1:
            ranges.append(f"\\u{start:04x}-\\u{previous:04x}" if previous > start else f"\\u{start:04x}")
            start = current
    return "".join(ranges)


_MARKS = _mark_ranges()
_WORD = re.compile(f"[^\\W_][\\w{_MARKS}]*(?:['\u2019.-][\\w{_MARKS}]+)*")
_HAN = "\u3005\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_HANGUL = "\uac00-\ud7af"
_KATAKANA = "\u30a0-\u30ff\u31f0-\u31ff"
_HIRAGANA = "\u3040-\u309f"
_SOUTHEAST_ASIAN = "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff"  # Thai, Lao, Myanmar, Khmer
_UNSPACED = _HAN + _HANGUL + _KATAKANA + _HIRAGANA + _SOUTHEAST_ASIAN
_HAS_UNSPACED = re.compile(f"[{_UNSPACED}]")
_INVISIBLE = re.compile(r"[\u00ad\u200b-\u200d\u2060\ufeff]")  # NFKC keeps them, and \w leaves them out
_RUNS = re.compile(f"([{_HAN}{_HANGUL}]+)|([{_KATAKANA}]+)|[{_HIRAGANA}]+|([{_SOUTHEAST_ASIAN}]+)|([^{_UNSPACED}]+)")


def normalized(text: str) -> str:
    """The text as words are read from it (segments here, capitalised phrases in app/entities/phrases.py)."""
    if _INVISIBLE.search(text):
        text = _INVISIBLE.sub("", text)
    return text if unicodedata.is_normalized("NFKC", text) else unicodedata.normalize("NFKC", text)


def grams(run: str, n: int) -> Iterator[str]:
    if len(run) <= n:
        yield run
        return
    for start in range(len(run) - n + 1):
        yield run[start : start + n]


def segments(text: str) -> Iterator[tuple[Kind, str]]:
    """("word", a word as written) and ("gram", a piece of text written without spaces), in reading order."""
    for token in _WORD.findall(normalized(text)):
        if token.isascii() or not _HAS_UNSPACED.search(token):
            yield "word", token
            continue
        for ideographs, katakana, alphabetic, other in _RUNS.findall(token):
            if ideographs:
                yield from (("gram", gram) for gram in grams(ideographs, 2))
            elif katakana:
                yield "gram", katakana
            elif alphabetic:
                yield from (("gram", gram) for gram in grams(alphabetic, 3))
            elif other and (word := other.strip("'\u2019.-")):
                yield "word", word
