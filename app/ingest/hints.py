"""What a publisher asked about polling: Retry-After, Cache-Control max-age, Expires, RSS <ttl> (pure)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

_MAX_AGE = re.compile(r"(?:^|,)\s*(?:s-)?max-age\s*=\s*\"?(\d+)", re.IGNORECASE)


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
    value = value.strip()
    if value.isdigit():
        return float(value)
    when = _http_date(value)
    if when is None:
        return None
    return max((when - (now or datetime.now(UTC))).total_seconds(), 0.0)


def publisher_delay_s(hints: dict[str, str], ttl_minutes: str | int | None, now: datetime) -> float:
    """The longest wait any hint asks for (0 when none does). Miniflux honours the same set."""
    delays = [0.0]
    cache_control = hints.get("cache-control", "")
    if match := _MAX_AGE.search(cache_control):
        delays.append(float(match.group(1)))
    elif "expires" in hints and (when := _http_date(hints["expires"])) is not None:
        delays.append((when - now).total_seconds())
    if (retry := parse_retry_after(hints.get("retry-after"), now)) is not None:
        delays.append(retry)
    if ttl_minutes is not None and str(ttl_minutes).strip().isdigit():
        delays.append(int(str(ttl_minutes).strip()) * 60.0)
    return max(delays)
