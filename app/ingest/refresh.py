"""The refresh of one source, start to end: load, fetch, parse, store new articles, schedule the next check.

This function is a unit-of-work edge, like a request handler: it opens two short transactions of its own (read
the plan, then write the outcome) so that no connection sits idle in a transaction during network I/O.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.articles import repository as articles
from app.articles.fingerprints import content_hash
from app.ingest.fetch import FetchedFeed, FetchError, FetchPolicy, fetch_feed
from app.ingest.intervals import failure_delay_s, rate_from_spread, success_interval_s, updated_rate
from app.ingest.parse import FeedParseError, ParsedFeed, TextLimits, parse_feed
from app.settings import Settings
from app.sources import repository as sources
from app.sources.models import Circuit, ClaimStatus, CrawlSchedule, FetchLog, Source, SourceStatus

log = logging.getLogger(__name__)
CIRCUIT_OPENS_AT = 5


@dataclass(frozen=True, slots=True)
class RefreshOutcome:
    source_id: int
    status: str  # fetched | not_modified | failed | skipped
    new_article_ids: list[int] = field(default_factory=list)
    error_class: str | None = None


@dataclass(frozen=True, slots=True)
class _Plan:
    source: Source
    last_fetched_at: datetime | None


async def refresh_source(
    db: async_sessionmaker[AsyncSession],
    http: httpx.AsyncClient,
    settings: Settings,
    source_id: int,
) -> RefreshOutcome:
    async with db.begin() as session:
        plan = await _load_plan(session, source_id)
    if plan is None:
        return RefreshOutcome(source_id, "skipped")
    fetched_at = datetime.now(UTC)
    try:
        fetched = await fetch_feed(
            http,
            plan.source.feed_url,
            FetchPolicy.from_settings(settings),
            etag=plan.source.etag,
            last_modified=plan.source.last_modified,
        )
        parsed = None if fetched.not_modified else await asyncio.to_thread(_parse, fetched, settings, fetched_at)
    except (FetchError, FeedParseError) as error:
        async with db.begin() as session:
            return await _store_failure(session, settings, plan, error, fetched_at)
    async with db.begin() as session:
        return await _store_success(session, settings, plan, fetched, parsed, fetched_at)


async def _load_plan(session: AsyncSession, source_id: int) -> _Plan | None:
    schedule = await sources.lock_schedule(session, source_id)
    source = await session.get(Source, source_id)
    if schedule is None or source is None:
        return None
    if source.status != SourceStatus.ACTIVE:
        schedule.status = ClaimStatus.PENDING
        return None
    return _Plan(source=source, last_fetched_at=schedule.last_fetched_at)


def _parse(fetched: FetchedFeed, settings: Settings, fetched_at: datetime) -> ParsedFeed:
    limits = TextLimits(title=settings.title_max_chars, summary=settings.summary_max_chars)
    return parse_feed(
        fetched.body,
        feed_url=fetched.final_url,
        content_type=fetched.content_type,
        fetched_at=fetched_at,
        limits=limits,
    )


async def _store_success(
    session: AsyncSession,
    settings: Settings,
    plan: _Plan,
    fetched: FetchedFeed,
    parsed: ParsedFeed | None,
    now: datetime,
) -> RefreshOutcome:
    source = plan.source
    rows = [
        articles.NewArticle(
            source_id=source.id,
            external_id=e.external_id,
            url=e.url,
            title=e.title,
            summary=e.summary,
            author=e.author,
            published_at=e.published_at,
            content_hash=content_hash(e.title, e.summary),
        )
        for e in (parsed.entries if parsed else [])
    ]
    inserted = await articles.insert_new(session, rows)
    schedule = await sources.lock_schedule(session, source.id)
    assert schedule is not None  # the row is deleted only with its source, which cascades
    _schedule_after_success(schedule, settings, plan, parsed, len(inserted), now)
    for article in inserted:
        schedule.hourly_histogram[article.published_at.hour] += 1
    schedule.hourly_histogram = list(schedule.hourly_histogram)  # a new list, so the ORM sees the change
    if not fetched.not_modified:
        await sources.update_validators(session, source.id, etag=fetched.etag, last_modified=fetched.last_modified)
    await sources.add_fetch_log(
        session,
        FetchLog(
            source_id=source.id,
            status_code=fetched.status_code,
            duration_ms=fetched.duration_ms,
            bytes=len(fetched.body),
            items_seen=len(rows),
            items_new=len(inserted),
            error_class="parse_recovered" if parsed and parsed.bozo else None,
            error_message=parsed.bozo if parsed else None,
        ),
    )
    status = "not_modified" if fetched.not_modified else "fetched"
    return RefreshOutcome(source.id, status, [a.id for a in inserted])


def _schedule_after_success(
    schedule: CrawlSchedule,
    settings: Settings,
    plan: _Plan,
    parsed: ParsedFeed | None,
    new_count: int,
    now: datetime,
) -> None:
    if plan.last_fetched_at is None and parsed is not None:
        rate = rate_from_spread([e.published_at for e in parsed.entries]) or 0.0
    else:
        elapsed_h = (now - (plan.last_fetched_at or now)).total_seconds() / 3600
        rate = updated_rate(schedule.articles_per_hour, new_count, elapsed_h, settings.crawl_rate_ema_alpha)
    source = plan.source
    interval = success_interval_s(
        rate, settings.crawl_target_new_articles, source.min_interval_s, source.max_interval_s
    )
    schedule.articles_per_hour = rate
    schedule.consecutive_failures = 0
    schedule.circuit = Circuit.CLOSED
    schedule.last_error = None
    schedule.last_fetched_at = now
    schedule.status = ClaimStatus.PENDING
    schedule.next_crawl_at = now + timedelta(seconds=interval)


async def _store_failure(
    session: AsyncSession, settings: Settings, plan: _Plan, error: Exception, now: datetime
) -> RefreshOutcome:
    error_class = error.error_class if isinstance(error, FetchError) else "parse"
    status_code = error.status_code if isinstance(error, FetchError) else 200
    log.warning("source %s (%s) failed: %s: %s", plan.source.id, plan.source.feed_url, error_class, error)
    schedule = await sources.lock_schedule(session, plan.source.id)
    assert schedule is not None
    schedule.consecutive_failures += 1
    schedule.last_error = f"{error_class}: {error}"[:2000]
    if schedule.consecutive_failures >= CIRCUIT_OPENS_AT:
        schedule.circuit = Circuit.OPEN
    schedule.status = ClaimStatus.PENDING
    delay = failure_delay_s(schedule.consecutive_failures, settings.crawl_backoff_cap_exponent)
    schedule.next_crawl_at = now + timedelta(seconds=delay)
    await sources.add_fetch_log(
        session,
        FetchLog(
            source_id=plan.source.id,
            status_code=status_code,
            duration_ms=0,
            bytes=0,
            items_seen=0,
            items_new=0,
            error_class=error_class,
            error_message=str(error)[:2000],
        ),
    )
    return RefreshOutcome(plan.source.id, "failed", error_class=error_class)
