"""Named entities of an article, pure: capitalised phrases of its headline and summary, typed by a gazetteer of
places, the words organisations' names end in, and the title words people carry.

What each language gets: scripts with capital letters (Latin, Cyrillic, Greek, Armenian, Georgian's Mtavruli aside)
get people, organisations and places; a headline's own language adds its stop words to the English ones, so a
capitalised first word ("Die", "Как") is not taken for a name. Places are matched by their English (GeoNames)
names. Scripts without capitals (Chinese, Japanese, Korean, Thai, Arabic, Hebrew, Devanagari...) get none: no
capitalised phrase marks a name there, and guessing would put noise into stories and trends.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import stopwordsiso

from app.entities.gazetteer import place_form, places
from app.entities.kinds import ABBREVIATED_TITLES, HONORIFICS, NOT_NAMES, ORG_LAST, ROLES, demonym, is_acronym, kind_of
from app.entities.phrases import Phrase, phrases
from app.text.word_forms import fold_accents, stopwords

_NOISE = re.compile(r"\S*(?:https?://|www\.)\S*|[#@][\w.]+")  # links, hashtags and handles name nothing
MAX_TEXT = 1000  # characters of a summary read: a name that matters is in its first sentences
# Words that begin names ("New Zealand", "United Nations"), never stripped as common words
NAME_STARTS = frozenset({"new", "north", "south", "east", "west", "united", "san", "los", "las", "great", "greater"})
SUFFIXES = frozenset({"jr", "jr.", "sr", "sr.", "ii", "iii", "iv"})  # "Donald Trump Jr." is a person
HEADLINE_CASE_SHARE = 0.75  # a headline with this share of its longer words capitalised is in headline case
MAX_ENTITIES = 30  # an article names a few; a list of names pasted into a summary is not thirty stories' worth
MAX_NAME = 100  # characters: longer runs of capitals are shouting or markup, not a name (the longest bodies are ~60)
LONE = "?"  # a single capitalised word of no known kind, until the text says more
LONE_MENTIONS = 2
COMPANY_ROLES = frozenset({"chief executive", "chairman"})  # roles at a company: the name before them is one


@dataclass(frozen=True, slots=True)
class Entity:
    key: str  # kind and folded name: one entity across spellings ("U.S." and "US", "Navalny" and "Navalnyi" not)
    name: str  # as first written in full
    kind: str  # PER, ORG or LOC
    count: int  # mentions in headline and summary
    role: str | None = None  # a person's role as the text gives it ("president"), for telling people apart


@dataclass
class _Found:
    name: str
    kind: str
    count: int = 0
    role: str | None = None


def entity_key(kind: str, name: str) -> str:
    return f"{kind.lower()}:{' '.join(fold_accents(name.casefold().replace('.', '')).split())}"


def extract(title: str, summary: str = "", language: str | None = None) -> list[Entity]:
    """Entities of a headline and summary, most mentioned first."""
    return list(_cached(title[:MAX_TEXT], summary[:MAX_TEXT], language))


def extract_uncached(title: str, summary: str = "", language: str | None = None) -> tuple[Entity, ...]:
    """As `extract`, computed every time (for measuring its speed)."""
    title, summary = _NOISE.sub(" ", title[:MAX_TEXT]), _NOISE.sub(" ", summary[:MAX_TEXT])
    if not any(c.isupper() for c in title + summary):
        return ()
    stop = _stopwords(language)
    title_phrases = list(phrases(title))
    summary_phrases = list(phrases(summary))
    if _headline_case(title):  # every word capitalised: trust only what the summary or the gazetteer confirms
        confirmed = {" ".join(p.words).casefold() for p in summary_phrases}
        title_phrases = [p for p in title_phrases if _confirmed(p, confirmed)]
    found: dict[str, _Found] = {}
    for phrase in [*title_phrases, *summary_phrases]:
        _add(found, phrase, stop)
    _resolve_surnames(found)
    ranked = sorted(found.items(), key=lambda item: -item[1].count)
    return tuple(Entity(key, f.name, f.kind, f.count, f.role) for key, f in ranked[:MAX_ENTITIES])


# an article is understood, then clustered, by the same worker: its text is read once
_cached = functools.lru_cache(maxsize=4096)(extract_uncached)


@functools.cache  # one set union per language, not per article
def _stopwords(language: str | None) -> frozenset[str]:
    """Words a name neither begins nor ends with; a title's abbreviation at its end ("Florida Gov.") names no one."""
    return (stopwords(language) | NOT_NAMES | ABBREVIATED_TITLES) - NAME_STARTS


@functools.cache
def _common_english() -> frozenset[str]:
    """Words that open a sentence far more often than a name does ("Missing", "Pregnant" are not in it)."""
    return frozenset(w.casefold() for w in stopwordsiso.stopwords("en")) - NAME_STARTS


def _headline_case(title: str) -> bool:
    words = [w for w in title.split() if len(w) > 3 and w[:1].isalpha()]
    capitals = [w for w in words if w[:1].isupper()]
    if len(words) < 4 or len(capitals) < HEADLINE_CASE_SHARE * len(words):
        return False  # "Angela Merkel visits Paris" is written in sentence case
    return len(capitals) == len(words) or any(w.casefold() in _common_english() for w in capitals)


def _confirmed(phrase: Phrase, confirmed: set[str]) -> bool:
    folded = " ".join(phrase.words).casefold()
    return (
        folded in confirmed
        or place_form(folded) in places()
        or (len(phrase.words) == 1 and is_acronym(phrase.words[0]))
    )


def _add(found: dict[str, _Found], phrase: Phrase, stop: frozenset[str]) -> None:
    for part, employer in _split_at_roles(phrase):
        _add_name(found, part, stop, "ORG" if employer else None)


def _split_at_roles(phrase: Phrase) -> list[tuple[Phrase, bool]]:
    """ "Kodak CEO Jim Continenza" is an organisation (the name before a company role), then a person with a role;
    a role of two words is cut before its first ("Texas Lt. Gov. Dan Patrick", "UK Prime Minister Boris Johnson")."""
    words, parts, start = phrase.words, [], 0
    for index in range(1, len(words) - 1):
        if words[index].casefold() not in ROLES:
            continue
        pair = " ".join(words[index - 1 : index + 1]).casefold()  # "Prime Minister" is one role
        begin = index - 1 if pair in ROLES else index  # before a role of two words ("Lieutenant Governor", "Lt. Gov.")
        if begin > start:
            employer = ROLES[words[index].casefold()] in COMPANY_ROLES
            parts.append((Phrase(words[start:begin], phrase.sentence_start and start == 0), employer))
            start = begin
    parts.append((Phrase(words[start:], phrase.sentence_start and start == 0), False))
    return parts


def _add_name(found: dict[str, _Found], phrase: Phrase, stop: frozenset[str], kind: str | None) -> None:
    words = phrase.words
    if phrase.sentence_start and len(words) > 1 and words[0].casefold() in _common_english():
        words = words[1:]
    role, words = _strip(words, stop)
    if not words or " ".join(words).casefold() in ROLES or len(" ".join(words)) > MAX_NAME:
        return
    if kind is None:
        kind = _kind(phrase, role, words)
    if kind is None:
        return
    name = " ".join(words)
    entry = found.setdefault(entity_key(kind, name), _Found(name, kind))
    entry.count += 1
    if role in ROLES:
        entry.role = ROLES[role]


def _kind(phrase: Phrase, role: str | None, words: tuple[str, ...]) -> str | None:
    kind = "PER" if role is not None and len(words) <= 3 else kind_of(words, places())
    if phrase.sentence_start and len(words) == 1 and words == phrase.words and kind not in ("LOC", "ORG"):
        return LONE  # a capitalised first word is a name only if the text names it again
    if kind is None:
        return LONE if len(words) == 1 else None
    return kind


def _strip(words: tuple[str, ...], stop: frozenset[str]) -> tuple[str | None, tuple[str, ...]]:
    """The phrase without leading and trailing common words and numbers, and the role or honorific before it."""
    role = None
    while words and place_form(" ".join(words)) not in places():
        head = words[0].casefold()
        pair, triple = " ".join(words[:2]).casefold(), " ".join(words[:3]).casefold()
        if words[-1].casefold() in ORG_LAST and head in ROLES:  # "Justice Department" is no justice named Department
            break
        if triple in ROLES and len(words) > 3:
            role, words = triple, words[3:]
        elif pair in ROLES and len(words) > 2:
            role, words = pair, words[2:]
        elif (head in ROLES or head in HONORIFICS) and len(words) > 1:
            role, words = role or head, words[1:]
        elif head in stop or not any(c.isalpha() for c in head):
            words = words[1:]
        else:
            break
    if words and words[-1].casefold() in SUFFIXES:
        return role or "person", words
    while words and (words[-1].casefold() in stop or not any(c.isalpha() for c in words[-1])):
        words = words[:-1]
    return role, words


def _resolve_surnames(found: dict[str, _Found]) -> None:
    """A surname alone ("Mr Johnson", "Hancock") is the person named in full elsewhere in the text; another word
    alone is a name when the text uses it twice (an organisation, most often: "Qantas", "Mirvac"), else nothing."""
    people = {f.name.split()[-1].casefold(): key for key, f in found.items() if f.kind == "PER" and " " in f.name}
    for key in [k for k, f in found.items() if " " not in f.name and f.kind in ("PER", "ORG", LONE)]:
        full = people.get(found[key].name.casefold())
        if full is not None and full != key:
            alone = found.pop(key)
            found[full].count += alone.count
            found[full].role = found[full].role or alone.role
    for key in [k for k, f in found.items() if f.kind == LONE]:
        lone = found.pop(key)
        if lone.count >= LONE_MENTIONS and not demonym(lone.name):
            lone.kind = "PER" if lone.role else "ORG"
            found.setdefault(entity_key(lone.kind, lone.name), lone)
