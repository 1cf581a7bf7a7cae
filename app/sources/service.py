"""Business rules for adding sources: a normalized, fetchable, public URL, sane bounds, once."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from app.ingest.addresses import AddressRefused, check_url_target
from app.ingest.urls import InvalidUrl, normalize_url
from app.settings import Settings
from app.sources import repository
from app.sources.models import Source


class SourceErrorCode(enum.StrEnum):
    INVALID_URL = "invalid_url"
    ADDRESS_REFUSED = "address_refused"
    DUPLICATE = "duplicate"
    INVALID = "invalid"
    FORBIDDEN = "forbidden"


class SourceRejected(Exception):
    """A source the caller asked for that newsagg will not store."""

    def __init__(self, code: SourceErrorCode, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.field = field


@dataclass(frozen=True, slots=True)
class SourceRequest:
    feed_url: str
    name: str | None = None
    category: str | None = None
    language: str | None = None
    authority: float = 0.5
    min_interval_minutes: float | None = None
    max_interval_minutes: float | None = None


async def create_source(
    session: AsyncSession, settings: Settings, request: SourceRequest, *, existing_ok: bool = False
) -> Source:
    feed_url = _checked_url(request.feed_url)
    try:
        await check_url_target(feed_url, allow_loopback=settings.allow_loopback_sources)
    except AddressRefused as error:
        raise SourceRejected(SourceErrorCode.ADDRESS_REFUSED, str(error), "feedUrl") from error
    min_s, max_s = _interval_bounds(settings, request)
    if not 0.0 <= request.authority <= 1.0:
        raise SourceRejected(SourceErrorCode.INVALID, "authority must be between 0 and 1", "authority")
    new = repository.NewSource(
        feed_url=feed_url,
        name=(request.name or feed_url)[:300],
        site_url=None,
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


def _interval_bounds(settings: Settings, request: SourceRequest) -> tuple[int, int]:
    low = request.min_interval_minutes or settings.crawl_min_interval_minutes
    high = request.max_interval_minutes or settings.crawl_max_interval_minutes
    if low <= 0 or high < low:
        raise SourceRejected(
            SourceErrorCode.INVALID, "need 0 < minIntervalMinutes <= maxIntervalMinutes", "minIntervalMinutes"
        )
    return int(low * 60), int(high * 60)
