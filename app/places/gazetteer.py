"""Place names resolved to countries (ISO 3166-1 alpha-2) and, for US states and the UK's nations, regions
(ISO 3166-2), for the places entity extraction finds: the same names as app/entities/places.txt.gz, so no second
pass over the text. The table ships beside this module (countries.tsv.gz), derived from GeoNames (CC BY 4.0) by
scripts/build_place_countries.py; its attribution ships beside it (countries.NOTICE.txt). Countries' codes and names
are app/places/countries.py's: checking a code never loads this table."""

from __future__ import annotations

import functools
import gzip
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from app.entities.gazetteer import place_form

COUNTRIES_FILE = Path(__file__).with_name("countries.tsv.gz")

# Names headlines use that GeoNames spells otherwise (app/entities/gazetteer.py's SHORT_PLACES), and the regions
# of ours that it has no row for
SHORT_NAMES: dict[str, tuple[str, str]] = {
    "us": ("US", ""), "u.s.": ("US", ""), "usa": ("US", ""), "uk": ("GB", ""), "u.k.": ("GB", ""),
    "britain": ("GB", ""), "great britain": ("GB", ""), "england": ("GB", "GB-ENG"), "scotland": ("GB", "GB-SCT"),
    "wales": ("GB", "GB-WLS"), "northern ireland": ("GB", "GB-NIR"), "nyc": ("US", "US-NY"), "la": ("US", "US-CA"),
    "l.a.": ("US", "US-CA"), "south l.a.": ("US", "US-CA"), "dc": ("US", "US-DC"), "washington": ("US", "US-DC"),
    "nsw": ("AU", ""), "hong kong": ("HK", ""), "gaza": ("PS", ""), "west bank": ("PS", ""),
    "the philippines": ("PH", ""), "silicon valley": ("US", "US-CA"), "west midlands": ("GB", "GB-ENG"),
    "uae": ("AE", ""), "calif": ("US", "US-CA"), "calif.": ("US", "US-CA"), "fla.": ("US", "US-FL"),
    "ariz.": ("US", "US-AZ"), "london": ("GB", "GB-ENG"), "new york": ("US", "US-NY"),
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Place:
    country: str  # ISO 3166-1 alpha-2
    region: str | None  # ISO 3166-2 where known ("US-CA", "GB-SCT")


@functools.cache
def _table() -> dict[str, tuple[Place, ...]]:
    """Folded place name -> its readings, most likely first."""
    named: dict[str, tuple[Place, ...]] = {}
    with gzip.open(COUNTRIES_FILE, "rt", encoding="utf-8") as rows:
        for line in rows:
            fields = line.rstrip("\n").split("\t")
            named[fields[1]] = tuple(Place(c, r or None) for c, r in zip(fields[2::2], fields[3::2], strict=True))
    named.update({name: (Place(country, region or None),) for name, (country, region) in SHORT_NAMES.items()})
    return named


def readings(name: str) -> tuple[Place, ...]:
    """The places a name found by entity extraction may be, most likely first (none: a continent, unknown)."""
    folded = place_form(name)
    found = _table().get(folded)
    if found is None and folded.startswith("the "):
        found = _table().get(folded[4:])
    return found or ()


def resolve(name: str, context: Collection[str] = ()) -> Place | None:
    """The reading of a name in one of the `context` countries (those the text names, its outlet's), else the most
    likely: "Valencia" is Venezuela's larger city, unless the article names Spain or a Spanish outlet wrote it."""
    found = readings(name)
    return next((place for place in found if place.country in context), found[0] if found else None)


def places_of(names: Sequence[str], outlet_country: str | None) -> list[Place | None]:
    """The places of one article's place names, each read in the light of the others that have one reading only
    ("Spain") and of its outlet's country."""
    context = {found[0].country for name in names if len(found := readings(name)) == 1}
    if outlet_country:
        context.add(outlet_country)
    return [resolve(name, context) for name in names]
