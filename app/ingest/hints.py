"""What a publisher asked about polling: Retry-After, Cache-Control max-age, Expires, RSS <ttl> (pure)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

_MAX_AGE = re.compile(r"(?:^|,)\s*(?:s-)?max-age\s*=\s*\"?([0-9]+)", re.IGNORECASE)
# No hint is read as asking for more than this (a crawl policy caps it lower): 400 digits or the year 9999 would
# overflow a datetime
LONGEST_S = 366 * 86400.0


def _seconds(value: str) -> float | None:
    """A count in ASCII digits, at most LONGEST_S; None for anything else (isdigit() alone passes "²", which
    float() refuses)."""
    value = value.strip()
    if not (value.isascii() and value.isdigit()):
        return None
    return min(float(value), LONGEST_S)


def _http_date(value: str) -> datetime | None:
    try:
        parsed = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait: `Retry-After: 120` or `Retry-After: <HTTP date>`; None when absent or unreadable."""
    if not value:
        return None
    if (seconds := _seconds(value)) is not None:
        return seconds
    when = _http_date(value.strip())
    if when is None:
        return None
    return min(max((when - (now or datetime.now(UTC))).total_seconds(), 0.0), LONGEST_S)


def publisher_delay_s(hints: dict[str, str], ttl_minutes: str | int | None, now: datetime) -> float:
    """The longest wait any hint asks for (0 when none does). Miniflux honours the same set."""
    delays = [0.0]
    cache_control = hints.get("cache-control", "")
    if match := _MAX_AGE.search(cache_control):
        delays.append(min(float(match.group(1)), LONGEST_S))
    elif "expires" in hints and (when := _http_date(hints["expires"])) is not None:
        delays.append(min((when - now).total_seconds(), LONGEST_S))
    if (retry := parse_retry_after(hints.get("retry-after"), now)) is not None:
        delays.append(retry)
    if ttl_minutes is not None and (minutes := _seconds(str(ttl_minutes))) is not None:
        delays.append(min(minutes * 60.0, LONGEST_S))
    return max(delays)
