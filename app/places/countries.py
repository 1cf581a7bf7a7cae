"""Countries by ISO 3166-1 alpha-2 code: the one check of a region or an outlet's country, and countries' English
names. They ship apart from the place gazetteer (country_names.tsv, GeoNames, CC BY 4.0: countries.NOTICE.txt), so
checking a code reads 252 short lines, not 31,000 place names."""

from __future__ import annotations

import functools
from pathlib import Path

NAMES_FILE = Path(__file__).with_name("country_names.tsv")
MAX_GIVEN = 16  # characters of a refused value quoted back


class InvalidRegion(ValueError):
    """Not an ISO 3166-1 alpha-2 country code ("UK", "England"); `field` is the value's name where it was given."""

    def __init__(self, given: str, field: str) -> None:
        super().__init__(f'{given[:MAX_GIVEN]!r} is not an ISO 3166-1 alpha-2 country code such as "DE" or "GB"')
        self.field = field


@functools.cache
def country_names() -> dict[str, str]:
    """ISO 3166-1 alpha-2 code -> English name."""
    with NAMES_FILE.open(encoding="utf-8") as rows:
        return dict(tuple(line.rstrip("\n").split("\t", 1)) for line in rows)  # type: ignore[misc]


def checked_country(code: str, field: str = "region") -> str:
    """The code in upper case ("gb" -> "GB"), or InvalidRegion for anything else ("UK", "England", "DE" in
    full-width letters)."""
    upper = code[: MAX_GIVEN + 1].strip().upper()
    if upper not in country_names():
        raise InvalidRegion(code, field)
    return upper
