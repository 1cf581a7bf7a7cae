"""What a source's editable fields may hold (pure): each value checked, or refused with the field it came from."""

from __future__ import annotations

import re

from app.places import outlets
from app.sources.errors import SourceErrorCode, SourceRejected

MAX_NAME, MAX_CATEGORY = 300, 100
LANGUAGE = re.compile(r"[a-z]{2,3}(-[a-z0-9]{2,8}){0,2}")  # BCP 47 as feeds write it: en, pt-br, zh-hant-tw
MAX_LANGUAGE = 16
# crawl intervals in minutes: the schedule stores whole seconds, and a month is as slow as a feed is worth polling
MIN_INTERVAL_MINUTES, MAX_INTERVAL_MINUTES = 1.0, 30 * 24 * 60.0


def _invalid(message: str, field: str) -> SourceRejected:
    return SourceRejected(SourceErrorCode.INVALID, message, field)


def _printable(value: str, field: str) -> str:
    if any(ord(c) < 32 or 0xD800 <= ord(c) <= 0xDFFF for c in value):
        raise _invalid("control characters and unpaired surrogates are not allowed", field)
    return value.strip()


def checked_name(value: str) -> str:
    name = _printable(value, "name")
    if not 1 <= len(name) <= MAX_NAME:
        raise _invalid(f"a name has 1 to {MAX_NAME} characters", "name")
    return name


def checked_category(value: str | None) -> str | None:
    """An empty category clears it."""
    category = _printable(value, "category") if value is not None else ""
    if len(category) > MAX_CATEGORY:
        raise _invalid(f"a category has at most {MAX_CATEGORY} characters", "category")
    return category or None


def checked_language(value: str | None) -> str | None:
    """Lower-cased; an empty code clears it."""
    code = (value or "").strip().lower()
    if code and (len(code) > MAX_LANGUAGE or not LANGUAGE.fullmatch(code)):
        raise _invalid('language: a BCP 47 code such as "en" or "pt-br"', "language")
    return code or None


def checked_authority(value: float) -> float:
    if not 0.0 <= value <= 1.0:  # NaN fails both comparisons
        raise _invalid("authority is between 0 and 1", "authority")
    return value


def interval_seconds(low_minutes: float, high_minutes: float,
                     floor_minutes: float = MIN_INTERVAL_MINUTES) -> tuple[int, int]:  # fmt: skip
    """(min, max) crawl interval in seconds, each between the floor (a minute; the demo's own replay server is
    polled faster) and a month, min <= max."""
    for value, field in ((low_minutes, "minIntervalMinutes"), (high_minutes, "maxIntervalMinutes")):
        if not floor_minutes <= value <= MAX_INTERVAL_MINUTES:
            raise _invalid(f"a crawl interval is {floor_minutes:g} to {MAX_INTERVAL_MINUTES:g} minutes", field)
    if high_minutes < low_minutes:
        raise _invalid("minIntervalMinutes must not exceed maxIntervalMinutes", "minIntervalMinutes")
    return round(low_minutes * 60), round(high_minutes * 60)


def checked_outlet_kind(value: str) -> str:
    kind = _printable(value, "outletKind").lower()
    if kind not in {k.value for k in outlets.OutletKind}:
        raise _invalid("an outlet kind is wire, national, local, international or unknown", "outletKind")
    return kind
