"""Fetching one article's page for its text: through the feed fetcher (SSRF guard, size cap, redirects, conditional
GET) after politeness admits it (robots.txt, the host's rate), extracted in a process apart (app/extraction/pool.py),
stored once.

Like a refresh, it never sleeps: a politeness wait or a transient error comes back as an outcome the job turns into
a deferred job. A page that cannot be had (robots.txt, 404, too large, no article in it) is stored as such and not
sought again.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from app.entities import repository as entities
from app.extraction import repository as texts
from app.extraction.pool import ExtractionCrashed, ExtractionTimedOut, read_page_apart
from app.ingest.addresses import AddressRefused, check_url_target
from app.ingest.fetch import FetchError, FetchPolicy, fetch_feed, refused
from app.ingest.politeness import Politeness
from app.observability.work import count_extraction_abandoned
from app.places import repository as places
from app.settings import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TextOutcome:
    article_id: int
    status: str  # extracted | empty | failed | not_modified | skipped | retry | deferred
    error_class: str | None = None
    retry_in_s: float | None = None


async def fetch_article_text(
    db: AsyncEngine,
    http: httpx.AsyncClient,
    politeness: Politeness,
    settings: Settings,
    article_id: int,
    *,
    attempt: int = 1,
    admitted: bool = False,
) -> TextOutcome:
    async with db.connect() as connection:
        target = await texts.fetch_target(connection, article_id)
    if target is None or target.url is None or not (target.wanted and settings.article_text_enabled) or target.has_text:
        return TextOutcome(article_id, "skipped")
    try:  # before robots.txt is asked: a page on a private address is refused as such, not as robots' refusal
        await check_url_target(target.url, allow_loopback=settings.allow_loopback_sources)
    except AddressRefused as refusal:  # UnusableURL among them: a link that names no address
        return await _failed(db, target, refused(refusal))
    if not admitted:
        admission = await politeness.admit(target.url)
        if not admission.allowed:
            error = FetchError(admission.error_class or "robots_disallowed", admission.reason or "disallowed")
            delays = settings.crawl_retry_delays_seconds
            if error.error_class != "robots_disallowed" and attempt <= len(delays):  # robots.txt unreachable: for now
                return TextOutcome(article_id, "retry", error.error_class, retry_in_s=delays[attempt - 1])
            return await _failed(db, target, error)
        if admission.wait_s > 0:
            return TextOutcome(article_id, "deferred", retry_in_s=admission.wait_s)
    policy = FetchPolicy.from_settings(settings, max_body_bytes=settings.article_max_bytes)
    try:
        fetch = functools.partial(fetch_feed, http, target.url, policy, etag=target.etag,
                                  last_modified=target.last_modified)  # fmt: skip
        page = await politeness.fetch_within_site(target.url, fetch)  # the site's cap counts pages too
    except FetchError as error:
        delays = settings.crawl_retry_delays_seconds
        if (error.transient or error.throttled) and attempt <= len(delays):
            asked = min(error.retry_after_s or 0.0, settings.crawl_hint_max_hours * 3600)
            wait = max(delays[attempt - 1], asked)
            return TextOutcome(article_id, "retry", error.error_class, retry_in_s=wait)
        return await _failed(db, target, error)
    if page is None:
        return TextOutcome(article_id, "deferred", retry_in_s=settings.politeness_slot_retry_seconds)
    if page.not_modified:
        return TextOutcome(article_id, "not_modified")
    try:
        found, named = await read_page_apart(page.body, page.final_url, target.title, target.declared_language,
                                             timeout_s=settings.article_extraction_timeout_seconds,
                                             nice=settings.article_extraction_nice)  # fmt: skip
    except (ExtractionCrashed, ExtractionTimedOut) as abandoned:
        return await _abandoned(db, target, abandoned, len(page.body))
    async with db.begin() as connection:
        await texts.save_page_text(connection, article_id, found, error_class=None if found else "empty",
                                   etag=page.etag, last_modified=page.last_modified)  # fmt: skip
        await entities.save(connection, {article_id: named})
        await places.save(connection, {article_id: named})
    return TextOutcome(article_id, "extracted" if found else "empty", None if found else "empty")


async def _abandoned(db: AsyncEngine, target: texts.FetchTarget, error: Exception, size: int) -> TextOutcome:
    """A page that crashed the extraction process or outlasted its time limit: the process was replaced, and the
    page is stored without text so that nothing seeks it again."""
    kind = "extraction_timeout" if isinstance(error, ExtractionTimedOut) else "extraction_crashed"
    log.warning("article %s (%s, %d bytes): %s, its extraction process replaced: %s", target.article_id, target.url,
                size, kind, error)  # fmt: skip
    count_extraction_abandoned(kind)
    return await _failed(db, target, FetchError(kind, str(error)))


async def _failed(db: AsyncEngine, target: texts.FetchTarget, error: FetchError) -> TextOutcome:
    log.info("article %s (%s): no text: %s: %s", target.article_id, target.url, error.error_class, error)
    async with db.begin() as connection:
        await texts.save_page_text(connection, target.article_id, None, error_class=error.error_class)
    return TextOutcome(target.article_id, "failed", error.error_class)
