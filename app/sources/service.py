"""Business rules for adding sources: a normalized, fetchable, public URL, sane bounds, once."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import UTC, datetime

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncSession

from app.ingest.addresses import AddressRefused, check_url_target
from app.ingest.urls import InvalidUrl, normalize_url
from app.settings import Settings
from app.sources import repository
from app.sources.models import Source, SourceStatus
from app.throttle import once_per

CATEGORY_MAX = 100  # characters, as stored (a BCP 47 language tag has at most 16 here)


class SourceErrorCode(enum.StrEnum):
    NOT_FOUND = "not_found"
    THROTTLED = "throttled"
    INVALID_URL = "invalid_url"
    ADDRESS_REFUSED = "address_refused"
    DUPLICATE = "duplicate"
    INVALID = "invalid"
    FORBIDDEN = "forbidden"


class SourceRejected(Exception):
    """A source the caller asked for that newsagg will not store."""

    def __init__(
        self, code: SourceErrorCode, message: str, field: str | None = None, retry_after_s: int | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.field = field
        self.retry_after_s = retry_after_s


@dataclass(frozen=True, slots=True)
class SourceRequest:
    feed_url: str
    name: str | None = None
    site_url: str | None = None
    category: str | None = None
    language: str | None = None
    authority: float = 0.5
    min_interval_minutes: float | None = None
    max_interval_minutes: float | None = None


async def create_source(
    session: AsyncSession,
    settings: Settings,
    request: SourceRequest,
    *,
    existing_ok: bool = False,
    resolve: bool = True,
) -> Source:
    """`resolve=False` skips the DNS lookup (trusted lists loaded offline); every fetch still checks the address
    it connects to."""
    feed_url = _checked_url(request.feed_url)
    if resolve:
        try:
            await check_url_target(feed_url, allow_loopback=settings.allow_loopback_sources)
        except AddressRefused as error:
            raise SourceRejected(SourceErrorCode.ADDRESS_REFUSED, str(error), "feedUrl") from error
    min_s, max_s = _interval_bounds(settings, request)
    if not 0.0 <= request.authority <= 1.0:
        raise SourceRejected(SourceErrorCode.INVALID, "authority must be between 0 and 1", "authority")
    for value, field, most in ((request.category, "category", CATEGORY_MAX), (request.language, "language", 16)):
        if value is not None and len(value) > most:
            raise SourceRejected(SourceErrorCode.INVALID, f"{field} has at most {most} characters", field)
    new = repository.NewSource(
        feed_url=feed_url,
        name=(request.name or feed_url)[:300],
        site_url=request.site_url,
        category=request.category,
        language=request.language,
        authority=request.authority,
        min_interval_s=min_s,
        max_interval_s=max_s,
    )
    source = await repository.insert_source(session, new)
    if source is not None:
        return source
    existing = await repository.source_by_feed_url(session, feed_url)
    if existing is None or not existing_ok:
        raise SourceRejected(SourceErrorCode.DUPLICATE, f"{feed_url} is already a source", "feedUrl")
    return existing


def _checked_url(raw: str) -> str:
    try:
        return normalize_url(raw)
    except InvalidUrl as error:
        raise SourceRejected(SourceErrorCode.INVALID_URL, str(error), "feedUrl") from error


INTERVAL_MINUTES_MAX = 366 * 24 * 60  # a source checked less than once a year is not being followed


def _interval_bounds(settings: Settings, request: SourceRequest) -> tuple[int, int]:
    """In whole seconds, as stored: at least one, at most a year (NaN and infinities fail every comparison)."""
    low = request.min_interval_minutes or settings.crawl_min_interval_minutes
    high = request.max_interval_minutes or settings.crawl_max_interval_minutes
    for value, field in ((low, "minIntervalMinutes"), (high, "maxIntervalMinutes")):
        if not 1 / 60 <= value <= INTERVAL_MINUTES_MAX:
            raise SourceRejected(SourceErrorCode.INVALID, f"{field} must be between 1/60 (one second) and "
                                 f"{INTERVAL_MINUTES_MAX} (a year)", field)  # fmt: skip
    if high < low:
        raise SourceRejected(
            SourceErrorCode.INVALID, "need minIntervalMinutes <= maxIntervalMinutes", "minIntervalMinutes"
        )
    return int(low * 60), int(high * 60)


async def request_refresh(
    session: AsyncSession, redis: Redis, settings: Settings, source_id: int
) -> tuple[Source, bool]:
    """(the source, whether the caller must enqueue its refresh now). A paused or dead source is reactivated;
    one already being fetched is left to that fetch. Throttled per source."""
    source = await session.get(Source, source_id)
    if source is None:
        raise SourceRejected(SourceErrorCode.NOT_FOUND, "no such source", "id")
    wait = await once_per(redis, f"refresh:{source_id}", settings.source_refresh_throttle_seconds)
    if wait:
        raise SourceRejected(SourceErrorCode.THROTTLED, f"refreshed recently; try again in {wait} s", "id", wait)
    if source.status != SourceStatus.ACTIVE:
        await repository.reactivate(session, source_id)
        source.status = SourceStatus.ACTIVE
    return source, await repository.claim_one(session, source_id, now=datetime.now(UTC))
