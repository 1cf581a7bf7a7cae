"""The refresh of one source, start to end: admit, fetch, parse, store new articles, schedule the next check.

This function is a unit-of-work edge, like a request handler: it opens short transactions of its own (read the
plan, then write the outcome) so that no connection sits idle in a transaction during network I/O. It never
sleeps: a wait (politeness, a retry) comes back as an outcome the job turns into a deferred job.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.articles import repository as articles
from app.articles.fingerprints import content_hash
from app.ingest.crawl_policy import Bounds, CrawlPolicy, CrawlState, Decision, FailureKind, after_failure, after_success
from app.ingest.fetch import FetchedFeed, FetchError, FetchPolicy, fetch_feed
from app.ingest.hints import publisher_delay_s
from app.ingest.parse import FeedParseError, ParsedFeed, TextLimits, parse_feed
from app.ingest.politeness import Politeness
from app.settings import Settings
from app.sources import repository as sources
from app.sources.models import ClaimStatus, CrawlSchedule, FetchLog, Source, SourceStatus

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RefreshOutcome:
    source_id: int
    status: str  # fetched | not_modified | failed | skipped | retry | deferred
    new_article_ids: list[int] = field(default_factory=list)
    error_class: str | None = None
    retry_in_s: float | None = None  # retry / deferred: run the refresh again after this long


@dataclass(frozen=True, slots=True)
class _Plan:
    source: Source
    state: CrawlState


async def refresh_source(
    db: async_sessionmaker[AsyncSession],
    http: httpx.AsyncClient,
    settings: Settings,
    source_id: int,
    *,
    politeness: Politeness | None = None,
    attempt: int = 1,
    admitted: bool = False,
) -> RefreshOutcome:
    """`attempt` counts transient-error retries; `admitted` means a politeness slot is already reserved."""
    async with db.begin() as session:
        plan = await _load_plan(session, source_id)
    if plan is None:
        return RefreshOutcome(source_id, "skipped")
    if politeness is not None and not admitted:
        admission = await politeness.admit(plan.source.feed_url)
        if not admission.allowed:
            error = FetchError("robots_disallowed", admission.reason or "disallowed")
            return await _fail(db, settings, plan, error, FailureKind.STRIKE)
        if admission.wait_s > 0:
            return RefreshOutcome(source_id, "deferred", retry_in_s=admission.wait_s)
    fetched_at = datetime.now(UTC)
    try:
        fetched = await fetch_feed(
            http, plan.source.feed_url, FetchPolicy.from_settings(settings),
            etag=plan.source.etag, last_modified=plan.source.last_modified, now=fetched_at,
        )  # fmt: skip
        parsed = None if fetched.not_modified else await asyncio.to_thread(_parse, fetched, settings, fetched_at)
    except FetchError as error:
        delays = settings.crawl_retry_delays_seconds
        if error.transient and attempt <= len(delays):
            async with db.begin() as session:
                await _log_error(session, plan.source.id, error, f" (attempt {attempt} of {len(delays) + 1})")
            return RefreshOutcome(source_id, "retry", error_class=error.error_class, retry_in_s=delays[attempt - 1])
        kind = FailureKind.THROTTLED if error.throttled else FailureKind.GONE if error.gone else FailureKind.STRIKE
        return await _fail(db, settings, plan, error, kind)
    except FeedParseError as error:
        return await _fail(db, settings, plan, error, FailureKind.STRIKE)
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
    return _Plan(source=source, state=_state_of(schedule))


def _state_of(row: CrawlSchedule) -> CrawlState:
    return CrawlState(
        articles_per_hour=row.articles_per_hour,
        hourly_histogram=tuple(row.hourly_histogram),
        last_fetched_at=row.last_fetched_at,
        consecutive_failures=row.consecutive_failures,
        gone_streak=row.gone_streak,
        throttle_streak=row.throttle_streak,
        circuit=row.circuit,
        redirect_url=row.redirect_url,
        redirect_streak=row.redirect_streak,
    )


async def _apply(session: AsyncSession, source: Source, decision: Decision, last_error: str | None) -> None:
    """Write a decision: the schedule row, and the source's status or URL when they change."""
    schedule = await sources.lock_schedule(session, source.id)
    assert schedule is not None  # deleted only with its source, which cascades
    state = decision.state
    schedule.articles_per_hour = state.articles_per_hour
    schedule.hourly_histogram = list(state.hourly_histogram)
    schedule.last_fetched_at = state.last_fetched_at
    schedule.consecutive_failures = state.consecutive_failures
    schedule.gone_streak = state.gone_streak
    schedule.throttle_streak = state.throttle_streak
    schedule.circuit = state.circuit
    schedule.redirect_url = state.redirect_url
    schedule.redirect_streak = state.redirect_streak
    schedule.last_error = last_error
    schedule.status = ClaimStatus.PENDING
    schedule.next_crawl_at = decision.next_crawl_at
    if decision.source_status != SourceStatus.ACTIVE:
        log.warning("source %s (%s) is now %s: %s", source.id, source.feed_url, decision.source_status, last_error)
        await sources.update_source(session, source.id, status=decision.source_status)
    if decision.move_feed_to and not await sources.feed_url_taken(session, decision.move_feed_to):
        log.info("source %s moved permanently: %s -> %s", source.id, source.feed_url, decision.move_feed_to)
        await sources.update_source(session, source.id, feed_url=decision.move_feed_to, etag=None, last_modified=None)


def _parse(fetched: FetchedFeed, settings: Settings, fetched_at: datetime) -> ParsedFeed:
    limits = TextLimits(title=settings.title_max_chars, summary=settings.summary_max_chars)
    return parse_feed(
        fetched.body, feed_url=fetched.final_url, content_type=fetched.content_type,
        fetched_at=fetched_at, limits=limits,
    )  # fmt: skip


async def _store_success(
    session: AsyncSession,
    settings: Settings,
    plan: _Plan,
    fetched: FetchedFeed,
    parsed: ParsedFeed | None,
    now: datetime,
) -> RefreshOutcome:
    source = plan.source
    entries = parsed.entries if parsed else []
    rows = [
        articles.NewArticle(
            source_id=source.id, external_id=e.external_id, url=e.url, title=e.title, summary=e.summary,
            author=e.author, published_at=e.published_at, content_hash=content_hash(e.title, e.summary),
        )
        for e in entries
    ]  # fmt: skip
    inserted = await articles.insert_new(session, rows)
    decision = after_success(
        plan.state,
        Bounds(source.min_interval_s, source.max_interval_s),
        CrawlPolicy.from_settings(settings),
        now=now,
        new_published=[a.published_at for a in inserted],
        document_published=[e.published_at for e in entries],
        publisher_delay_s=publisher_delay_s(fetched.hints, parsed.ttl_minutes if parsed else None, now),
        feed_url=source.feed_url,
        permanent_url=fetched.permanent_url,
    )
    await _apply(session, source, decision, last_error=None)
    if not fetched.not_modified:
        await sources.update_source(session, source.id, etag=fetched.etag, last_modified=fetched.last_modified)
    await sources.add_fetch_log(
        session,
        FetchLog(
            source_id=source.id, status_code=fetched.status_code, duration_ms=fetched.duration_ms,
            bytes=len(fetched.body), items_seen=len(rows), items_new=len(inserted),
            error_class="parse_recovered" if parsed and parsed.bozo else None,
            error_message=parsed.bozo if parsed else None,
        ),
    )  # fmt: skip
    status = "not_modified" if fetched.not_modified else "fetched"
    return RefreshOutcome(source.id, status, [a.id for a in inserted])


async def _fail(
    db: async_sessionmaker[AsyncSession], settings: Settings, plan: _Plan, error: Exception, kind: FailureKind
) -> RefreshOutcome:
    error_class = error.error_class if isinstance(error, FetchError) else "parse"
    retry_after = error.retry_after_s if isinstance(error, FetchError) else None
    log.warning("source %s (%s) failed: %s: %s", plan.source.id, plan.source.feed_url, error_class, error)
    decision = after_failure(
        plan.state, CrawlPolicy.from_settings(settings), now=datetime.now(UTC), kind=kind, retry_after_s=retry_after
    )
    async with db.begin() as session:
        await _apply(session, plan.source, decision, last_error=f"{error_class}: {error}"[:2000])
        await _log_error(session, plan.source.id, error)
    return RefreshOutcome(plan.source.id, "failed", error_class=error_class)


async def _log_error(session: AsyncSession, source_id: int, error: Exception, suffix: str = "") -> None:
    await sources.add_fetch_log(
        session,
        FetchLog(
            source_id=source_id,
            status_code=error.status_code if isinstance(error, FetchError) else 200,
            duration_ms=0, bytes=0, items_seen=0, items_new=0,
            error_class=error.error_class if isinstance(error, FetchError) else "parse",
            error_message=(str(error) + suffix)[:2000],
        ),
    )  # fmt: skip
