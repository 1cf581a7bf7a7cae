"""Capitalised phrases of a text: runs of capitalised words ("Angela Merkel", "Bank of England"), each with the
title word before it ("President", "Mr", "Sen.") and whether it opens a sentence (where any word is capitalised).
A title's full stop stays ("Gov." is a role, "Gov" a word of the name) and ends no sentence."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass

from app.entities.gazetteer import place_form, places
from app.entities.kinds import ABBREVIATED_TITLES
from app.text.segments import normalized

# Words, punctuation, and any other sign alone ("•", "/", "+", an emoji or flag): a sign between two names ends the
# first ("Joe Biden 🇺🇸 Xi Jinping" names two people); combining marks, variation selectors and direction marks are
# no signs (`normalized` has removed soft hyphens and zero-width characters, so "Mer\u00adkel" is one word).
_TOKEN = re.compile(
    r"[^\W_][\w]*(?:['\u2019.&-][\w]+)*\.?|[.,!?:;|\"\u201c\u201d\u2018()\[\]\u2014\u2013]|\s-\s|&"
    r"|[^\w\s\u0300-\u036f\u200b-\u200f\u2060\ufe00-\ufe0f\ufeff]"
)
_BREAK = frozenset('.,!?:;|"\u201c\u201d\u2018()[]\u2014\u2013') | {" - "}
CONNECTORS = frozenset({"of", "de", "la", "del", "van", "von", "der", "da", "al", "bin", "du", "di", "&", "y"})
SHOUTED_LETTERS = 6  # an all-capitals word this long is emphasis ("MONTHS"), not a name ("NASA")


@dataclass(frozen=True, slots=True)
class Phrase:
    words: tuple[str, ...]
    sentence_start: bool


@functools.lru_cache(maxsize=1 << 16)  # pure, and headline words repeat: each word is judged once
def capitalised(word: str) -> bool:
    letters = [c for c in word if c.isalpha()]
    if not letters or not letters[0].isupper():
        return False
    shouted = len(letters) >= SHOUTED_LETTERS and all(c.isupper() for c in letters)
    return not shouted or place_form(word) in places()  # a dateline ("SINGAPORE -") names a place


def phrases(text: str) -> Iterator[Phrase]:
    """Every maximal run of capitalised words (connectors allowed inside), in reading order."""
    run: list[str] = []
    starts, run_start = True, True
    for token in _TOKEN.findall(normalized(text)):
        token = token.strip()
        if token in _BREAK or (token.endswith(".") and len(token) > 3 and not capitalised(token)):
            yield from _close(run, run_start)
            run, starts = [], True
            continue
        if capitalised(token) or (run and token.casefold() in CONNECTORS):
            if not run:
                run_start = starts
            ends = (  # "Collins." ends a sentence, "Prof." does not
                token.endswith(".") and len(token) > 4 and "." not in token[:-1] and not _title(token)
            )
            if token[-2:] in ("'s", "\u2019s") or ends:  # "Russia's Alexey Navalny" is two names
                run.append(token[:-2] if not ends else token[:-1])
                yield from _close(run, run_start)
                run = []
                starts = ends
                continue
            run.append(token)
        else:
            yield from _close(run, run_start)
            run = []
        starts = token.endswith(".") and not capitalised(token)
    yield from _close(run, run_start)


def _close(run: list[str], sentence_start: bool) -> Iterator[Phrase]:
    while run and run[-1].casefold() in CONNECTORS:
        run = run[:-1]
    if run:
        yield Phrase(tuple(_without_stop(w) for w in run), sentence_start)


def _without_stop(word: str) -> str:
    """ "Inc." is "Inc", "U.S." and "Jr." stay (app/entities/extractor.py), and so does a title's stop."""
    return word.rstrip(".") if len(word) > 3 and word.count(".") == 1 and not _title(word) else word


def _title(word: str) -> bool:
    return word.casefold() in ABBREVIATED_TITLES
