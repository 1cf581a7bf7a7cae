"""The refresh of one source, start to end: admit, fetch, parse, store new articles, schedule the next check.

This function is a unit-of-work edge, like a request handler: it opens short transactions of its own (read the
plan, then write the outcome) so that no connection sits idle in a transaction during network I/O. It never
sleeps: a wait (politeness, a retry) comes back as an outcome the job turns into a deferred job.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import httpx
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.archive import service as archive
from app.articles import repository as articles
from app.articles.fingerprints import content_hash
from app.extraction.repository import save_feed_texts
from app.extraction.text import ExtractedArticle, feed_text
from app.ingest.addresses import AddressRefused, url_target
from app.ingest.crawl_policy import (
    Bounds,
    CrawlPolicy,
    CrawlState,
    Decision,
    FailureKind,
    after_failure,
    after_push,
    after_success,
)
from app.ingest.events import announce_articles_added
from app.ingest.fetch import FetchedFeed, FetchError, FetchPolicy, fetch_feed, refused
from app.ingest.hints import publisher_delay_s
from app.ingest.parse import FeedParseError, ParsedEntry, ParsedFeed, TextLimits, parse_feed
from app.ingest.parser_thread import in_parser_thread
from app.ingest.politeness import Politeness
from app.ingest.urls import normalized_or_none
from app.observability.work import count_fetch_failure
from app.places.outlets import infer
from app.settings import Settings
from app.sources import repository as sources
from app.sources.models import ClaimStatus, SourceStatus
from app.sources.rules import MAX_NAME
from app.websub.protocol import Discovery, discover
from app.websub.service import WebSubView, pushed, wants_subscription

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RefreshOutcome:
    source_id: int
    status: str  # fetched | not_modified | failed | skipped | retry | deferred | postponed
    new_article_ids: list[int] = field(default_factory=list)
    error_class: str | None = None
    retry_in_s: float | None = None  # retry / deferred: run the refresh again after this long (postponed: the claim
    # was returned instead, the source due again then)
    subscribe: Discovery | None = None  # a WebSub hub to subscribe to, after commit
    article_text_ids: list[int] = field(default_factory=list)  # new articles whose page to fetch for their text


@dataclass(frozen=True, slots=True)
class _SourceView:
    """The columns of a source a refresh reads."""

    id: int
    feed_url: str
    etag: str | None
    last_modified: str | None
    min_interval_s: int
    max_interval_s: int
    websub: WebSubView
    name: str = ""
    site_url: str | None = None
    admin_fields: tuple[str, ...] = ()  # what the feed may not rename: see _identity
    article_text: bool = True  # fetch the pages of articles that come without their full text


@dataclass(frozen=True, slots=True)
class _Plan:
    source: _SourceView
    state: CrawlState
    claimed_at: datetime | None = None  # when the source's current claim was made (it names the claim)


async def refresh_source(
    db: AsyncEngine,
    http: httpx.AsyncClient,
    settings: Settings,
    source_id: int,
    *,
    politeness: Politeness | None = None,
    attempt: int = 1,
    admitted: bool = False,
) -> RefreshOutcome:
    """`attempt` counts transient-error retries; `admitted` means a politeness slot is already reserved."""
    plan = await _load_plan(db, source_id)
    if plan is None:
        return RefreshOutcome(source_id, "skipped")
    try:  # a stored URL that names no address fails here, as a fetch, before politeness reads its host
        url_target(plan.source.feed_url)
    except AddressRefused as refusal:
        return await _fail(db, settings, plan, refused(refusal), FailureKind.STRIKE)
    if politeness is not None and not admitted:
        longest = longest_claimed_wait_s(settings, plan.claimed_at, datetime.now(UTC))
        admission = await politeness.admit(plan.source.feed_url, longest_wait_s=longest)
        if not admission.allowed:
            error = FetchError(admission.error_class or "robots_disallowed", admission.reason or "disallowed")
            return await _fail(db, settings, plan, error, FailureKind.STRIKE)
        if not admission.reserved:
            return await _postpone(db, plan, admission.wait_s)
        if admission.wait_s > 0:
            return RefreshOutcome(source_id, "deferred", retry_in_s=admission.wait_s)
    fetched_at = datetime.now(UTC)
    try:
        fetched = await _fetch(http, settings, plan.source, politeness, fetched_at)
    except FetchError as error:
        delays = settings.crawl_retry_delays_seconds
        if error.transient and attempt <= len(delays):
            count_fetch_failure("feed", error.error_class)
            async with db.begin() as connection:
                note = f" (attempt {attempt} of {len(delays) + 1})"
                await sources.add_fetch_log(connection, source_id=plan.source.id, **_error_log(error, note))
            return RefreshOutcome(source_id, "retry", error_class=error.error_class, retry_in_s=delays[attempt - 1])
        kind = FailureKind.THROTTLED if error.throttled else FailureKind.GONE if error.gone else FailureKind.STRIKE
        return await _fail(db, settings, plan, error, kind)
    if fetched is None:  # the site has as many requests in flight as it may: the reserved slot is kept
        return RefreshOutcome(source_id, "deferred", retry_in_s=settings.politeness_slot_retry_seconds)
    return await _ingest(db, settings, plan, fetched, fetched_at)


def longest_claimed_wait_s(settings: Settings, claimed_at: datetime | None, now: datetime) -> float:
    """The longest politeness wait a refresh takes with its source's claim held: what is left of half the in-flight
    timeout, the other half for the deferred job to start, fetch and retry before the claim is thought abandoned
    (released, and its job superseded when it runs)."""
    held_s = (now - claimed_at).total_seconds() if claimed_at is not None else 0.0
    return max(settings.crawl_in_flight_timeout_minutes * 60 / 2 - held_s, 0.0)


async def _postpone(db: AsyncEngine, plan: _Plan, wait_s: float) -> RefreshOutcome:
    """The site's next turn is further off than the claim can wait: the claim is returned, the source due when that
    turn comes, and no turn is taken. (A turn reserved for a job that its claim's release then supersedes is lost,
    and holds back every other request to the site: on a site of many feeds and a low rate, turns reserved further
    and further off, all lost, until none of its feeds is fetched at all.)"""
    until = datetime.now(UTC) + timedelta(seconds=wait_s)
    async with db.begin() as connection:
        await sources.postpone_claim(connection, plan.source.id, claimed_at=plan.claimed_at, until=until)
    log.info("source %s: its site's next turn is %.0f s off, past its claim: due again then", plan.source.id, wait_s)
    return RefreshOutcome(plan.source.id, "postponed", retry_in_s=wait_s)


async def _fetch(
    http: httpx.AsyncClient, settings: Settings, source: _SourceView, politeness: Politeness | None, now: datetime
) -> FetchedFeed | None:
    """The feed, fetched within one of its site's concurrent requests; None when they are all taken."""
    fetch = functools.partial(fetch_feed, http, source.feed_url, FetchPolicy.from_settings(settings),
                              etag=source.etag, last_modified=source.last_modified, now=now)  # fmt: skip
    return await (fetch() if politeness is None else politeness.fetch_within_site(source.feed_url, fetch))


async def ingest_body(
    db: AsyncEngine,
    settings: Settings,
    source_id: int,
    body: bytes,
    content_type: str | None = None,
) -> RefreshOutcome:
    """A feed document a hub pushed: parsed and stored as if fetched, but only the rate and the hours it counts towards
    change in the source's crawl state. A push is no poll: it says nothing of whether the feed's URL answers, and it
    may come while a refresh holds the source's claim, so the claim, the failures, the circuit, the redirect streak
    and the next poll are left as the polls made them (a body that does not parse is logged, and no strike)."""
    plan = await _load_plan(db, source_id)
    if plan is None:
        return RefreshOutcome(source_id, "skipped")
    headers = {"content-type": content_type} if content_type else {}
    fetched = FetchedFeed(status_code=200, final_url=plan.source.feed_url, body=body, content_type=content_type,
                          etag=plan.source.etag, last_modified=plan.source.last_modified, duration_ms=0,
                          headers=headers)  # fmt: skip
    return await _ingest(db, settings, plan, fetched, datetime.now(UTC), push=True)


async def _ingest(
    db: AsyncEngine, settings: Settings, plan: _Plan, fetched: FetchedFeed, now: datetime, *, push: bool = False
) -> RefreshOutcome:
    try:
        parsed = None if fetched.not_modified else await in_parser_thread(_parse, fetched, settings, now)
    except FeedParseError as error:
        if push:
            return await _push_unreadable(db, settings, plan, error, fetched)
        return await _fail(db, settings, plan, error, FailureKind.STRIKE, unreadable=fetched)
    async with db.begin() as connection:
        return await _store_success(connection, settings, plan, fetched, parsed, now, push=push)


async def _load_plan(db: AsyncEngine, source_id: int) -> _Plan | None:
    """One round trip: an autocommit read (the caller owns the source through its claim, so no lock is needed)."""
    async with db.connect() as connection:
        connection = await connection.execution_options(isolation_level="AUTOCOMMIT")
        row = await sources.refresh_row(connection, source_id)
        if row is None:
            return None
        if row.status != SourceStatus.ACTIVE:
            await sources.save_schedule(connection, source_id, status=ClaimStatus.PENDING)
            return None
    websub = WebSubView(row.websub_state, row.websub_hub, row.websub_lease_expires_at, row.websub_updated_at)
    view = _SourceView(row.id, row.feed_url, row.etag, row.last_modified, row.min_interval_s, row.max_interval_s,
                       websub, row.name, row.site_url, tuple(row.admin_fields), row.article_text)  # fmt: skip
    return _Plan(source=view, state=_state_of(row), claimed_at=row.last_triggered_at)


async def _as_it_is_now(connection: AsyncConnection, plan: _Plan) -> _Plan:
    """The plan with the source's crawl state read again, its source and schedule rows locked until commit: a push may
    have been stored while a refresh fetched (a refresh holds its claim, a push takes none), or a poll while a push
    parsed, and the outcome stored second builds on the first's counts rather than write back the state read before
    them. Taken first in the transaction: the stores of one source then queue here holding nothing, where locked after
    their articles were inserted they deadlocked (two pushes inserting shared entries in another order; a push's
    insert holding a key lock on the source row a refresh's feed move waits for, while it waits for the refresh)."""
    row = await sources.refresh_row(connection, plan.source.id, lock=True)
    return plan if row is None else replace(plan, state=_state_of(row))


def _state_of(row: Any) -> CrawlState:
    return CrawlState(
        articles_per_hour=row.articles_per_hour,
        hourly_histogram=tuple(row.hourly_histogram),
        last_fetched_at=row.last_fetched_at,
        consecutive_failures=row.consecutive_failures,
        gone_streak=row.gone_streak,
        gone_since=row.gone_since,
        throttle_streak=row.throttle_streak,
        circuit=row.circuit,
        redirect_url=row.redirect_url,
        redirect_streak=row.redirect_streak,
    )


def _polled(decision: Decision, last_error: str | None = None) -> dict[str, object]:
    """The schedule row after a poll: the whole crawl state, the claim released, the next poll."""
    state = decision.state
    return {
        **_counted(state), "consecutive_failures": state.consecutive_failures,
        "gone_streak": state.gone_streak, "gone_since": state.gone_since, "throttle_streak": state.throttle_streak,
        "circuit": state.circuit,
        "redirect_url": state.redirect_url, "redirect_streak": state.redirect_streak, "last_error": last_error,
        "status": ClaimStatus.PENDING, "next_crawl_at": decision.next_crawl_at,
    }  # fmt: skip


def _counted(state: CrawlState) -> dict[str, object]:
    """The schedule row's article counters: all a push changes."""
    return {"articles_per_hour": state.articles_per_hour, "hourly_histogram": list(state.hourly_histogram),
            "last_fetched_at": state.last_fetched_at}  # fmt: skip


async def _apply(
    connection: AsyncConnection,
    source: _SourceView,
    schedule: dict[str, object],
    fetch_log: dict[str, object],
    *,
    decision: Decision | None = None,  # a poll's: the source's status and a move of its feed URL follow it
    validators: dict[str, str | None] | None = None,
) -> int:
    """Write a schedule row, its fetch log row (its id returned), and the source row only when it changes."""
    changes: dict[str, object] = {k: v for k, v in (validators or {}).items() if v != getattr(source, k)}
    if decision is not None and decision.source_status != SourceStatus.ACTIVE:
        log.warning("source %s (%s) is now %s: %s", source.id, source.feed_url, decision.source_status,
                    schedule.get("last_error"))  # fmt: skip
        changes["status"] = decision.source_status
    move_to = decision.move_feed_to if decision is not None else None
    if move_to and not await sources.feed_url_taken(connection, move_to):
        log.info("source %s moved permanently: %s -> %s", source.id, source.feed_url, move_to)
        changes.update(feed_url=move_to, etag=None, last_modified=None)
    if changes.get("site_url"):  # the feed's own link: where an outlet nobody placed is, when its domain says
        await sources.place_inferred_outlet(
            connection, source.id, infer(str(changes["site_url"]), source.feed_url, None)
        )
    return await sources.record_fetch(connection, source.id, schedule=schedule, fetch_log=fetch_log,
                                      source_changes=changes)  # fmt: skip


def article_rows(source_id: int, entries: list[ParsedEntry]) -> list[articles.NewArticle]:
    return [
        articles.NewArticle(
            source_id=source_id, external_id=e.external_id, url=e.url, title=e.title, summary=e.summary,
            author=e.author, published_at=e.published_at, content_hash=content_hash(e.title, e.summary),
        )
        for e in entries
    ]  # fmt: skip


def _parse(fetched: FetchedFeed, settings: Settings, fetched_at: datetime) -> ParsedFeed:
    limits = TextLimits(title=settings.title_max_chars, summary=settings.summary_max_chars)
    return parse_feed(
        fetched.body, feed_url=fetched.final_url, content_type=fetched.content_type,
        fetched_at=fetched_at, limits=limits,
    )  # fmt: skip


async def _store_success(
    connection: AsyncConnection,
    settings: Settings,
    plan: _Plan,
    fetched: FetchedFeed,
    parsed: ParsedFeed | None,
    now: datetime,
    *,
    push: bool = False,
) -> RefreshOutcome:
    plan = await _as_it_is_now(connection, plan)
    source = plan.source
    entries = parsed.entries if parsed else []
    rows = article_rows(source.id, entries)
    inserted = await articles.insert_new(connection, rows)
    pages = await _store_texts(connection, settings, source, entries, inserted)
    found = discover(fetched.links, parsed.links if parsed else {}, source.feed_url)
    new_published = [a.published_at for a in inserted]
    policy = CrawlPolicy.from_settings(settings)
    decision = None if push else _after_poll(settings, policy, plan, fetched, parsed, now, new_published)
    if decision is None:  # a push: its articles counted, the rest of the crawl state left to the polls
        schedule = _counted(after_push(plan.state, policy, now=now, new_published=new_published))
    else:
        schedule = _polled(decision)
    validators = None if fetched.not_modified else {"etag": fetched.etag, "last_modified": fetched.last_modified,
                                                    **_identity(source, parsed)}  # fmt: skip
    fetch_log: dict[str, object] = {
        "status_code": fetched.status_code, "duration_ms": fetched.duration_ms, "bytes": len(fetched.body),
        "items_seen": len(rows), "items_new": len(inserted),
        "error_class": "parse_recovered" if parsed and parsed.bozo else None,
        "error_message": parsed.bozo if parsed else None,
    }  # fmt: skip
    fetch_id = await _apply(connection, source, schedule, fetch_log, decision=decision, validators=validators)
    await archive.keep(connection, settings, fetch_id, source.id, fetched, [a.id for a in inserted])
    await announce_articles_added(connection, source.id, [a.id for a in inserted])
    status = "not_modified" if fetched.not_modified else "fetched"
    subscribe = found if wants_subscription(source.websub, found, settings, now) else None
    return RefreshOutcome(source.id, status, [a.id for a in inserted], subscribe=subscribe, article_text_ids=pages)


def _after_poll(
    settings: Settings,
    policy: CrawlPolicy,
    plan: _Plan,
    fetched: FetchedFeed,
    parsed: ParsedFeed | None,
    now: datetime,
    new_published: list[datetime],
) -> Decision:
    source = plan.source
    bounds = Bounds(source.min_interval_s, source.max_interval_s)
    if pushed(source.websub, now):  # the hub brings new entries; polling is only a safety net
        bounds = Bounds(int(settings.websub_poll_hours * 3600), int(settings.websub_poll_hours * 3600))
    return after_success(
        plan.state,
        bounds,
        policy,
        now=now,
        new_published=new_published,
        document_published=[e.published_at for e in (parsed.entries if parsed else [])],
        publisher_delay_s=publisher_delay_s(fetched.hints, parsed.ttl_minutes if parsed else None, now),
        feed_url=source.feed_url,
        # spelled as stored feed URLs are, so that a move onto another spelling of the feed, or of a source's, is seen
        permanent_url=normalized_or_none(fetched.permanent_url),
    )


async def _store_texts(
    connection: AsyncConnection,
    settings: Settings,
    source: _SourceView,
    entries: list[ParsedEntry],
    inserted: list[articles.InsertedArticle],
) -> list[int]:
    """New articles' full text: the feed's own when it has one (sanitized off the loop, for the new entries only),
    stored now; the articles whose pages are to be fetched for it otherwise (when the source wants that)."""
    by_id = {e.external_id: e for e in entries}
    contents = {a.id: content for a in inserted if (content := by_id[a.external_id].content)}
    from_feed = await in_parser_thread(_feed_texts, contents, settings.article_feed_text_min_words) if contents else {}
    await save_feed_texts(connection, from_feed)
    if not (settings.article_text_enabled and source.article_text):
        return []
    return [a.id for a in inserted if a.id not in from_feed and by_id[a.external_id].url]


def _feed_texts(contents: dict[int, str], min_words: int) -> dict[int, ExtractedArticle]:
    found = {article_id: feed_text(content, min_words) for article_id, content in contents.items()}
    return {article_id: text for article_id, text in found.items() if text is not None}


def _identity(source: _SourceView, parsed: ParsedFeed | None) -> dict[str, str]:
    """The feed's own title and link name the source, except where an administrator chose (sources.admin_fields)."""
    found = {"name": " ".join((parsed.title or "").split())[:MAX_NAME], "site_url": parsed.site_url} if parsed else {}
    return {field: value for field, value in found.items() if value and field not in source.admin_fields}


FeedError = FetchError | FeedParseError


async def _fail(
    db: AsyncEngine,
    settings: Settings,
    plan: _Plan,
    error: FeedError,
    kind: FailureKind,
    unreadable: FetchedFeed | None = None,  # a body that arrived but did not parse: archived for a better parser
) -> RefreshOutcome:
    log.warning("source %s (%s) failed: %s: %s", plan.source.id, plan.source.feed_url, error.error_class, error)
    count_fetch_failure("feed", error.error_class)
    async with db.begin() as connection:
        plan = await _as_it_is_now(connection, plan)
        decision = after_failure(
            plan.state, CrawlPolicy.from_settings(settings), now=datetime.now(UTC), kind=kind,
            retry_after_s=error.retry_after_s,
        )  # fmt: skip
        last_error = f"{error.error_class}: {error}"[:2000]
        fetch_id = await _apply(connection, plan.source, _polled(decision, last_error), _error_log(error),
                                decision=decision)  # fmt: skip
        if unreadable is not None:
            await archive.keep(connection, settings, fetch_id, plan.source.id, unreadable, [])
    return RefreshOutcome(plan.source.id, "failed", error_class=error.error_class)


async def _push_unreadable(
    db: AsyncEngine, settings: Settings, plan: _Plan, error: FeedParseError, body: FetchedFeed
) -> RefreshOutcome:
    """A pushed body that does not parse: logged and archived, no strike (the feed's own URL may answer well)."""
    log.warning("source %s (%s): a pushed body failed: %s: %s", plan.source.id, plan.source.feed_url,
                error.error_class, error)  # fmt: skip
    count_fetch_failure("feed", error.error_class)
    async with db.begin() as connection:
        fetch_id = await _apply(connection, plan.source, {}, _error_log(error))
        await archive.keep(connection, settings, fetch_id, plan.source.id, body, [])
    return RefreshOutcome(plan.source.id, "failed", error_class=error.error_class)


def _error_log(error: FeedError, suffix: str = "") -> dict[str, object]:
    """The fetch log row of a fetch that produced no feed."""
    return {
        "status_code": error.status_code, "duration_ms": 0, "bytes": 0, "items_seen": 0, "items_new": 0,
        "error_class": error.error_class, "error_message": (str(error) + suffix)[:2000],
    }  # fmt: skip
