"""Feed bytes to a normalized model with feedparser (RSS 0.9x/1.0/2.0, Atom, JSON Feed)."""

from __future__ import annotations

import calendar
import logging
import re
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import feedparser

from app.ingest.jsonfeed import NotJsonFeed, looks_like_json, read_json_feed
from app.ingest.text import html_to_text
from app.ingest.urls import normalized_or_none
from app.text.storable import storable

log = logging.getLogger(__name__)
# A DOCTYPE's internal subset is where entity bombs live; feeds never need it.
_DOCTYPE = re.compile(rb"<!DOCTYPE\s[^\[>]*(?:\[.*?\]\s*)?>", re.IGNORECASE | re.DOTALL)
_PROLOG_BYTES = 4096
GUID_TOLERANCE = 0.05
UNTITLED_TITLE_CHARS = 120


class FeedParseError(ValueError):
    """The body is not a feed we can read (an HTML page, a truncated download, garbage).

    It answers the questions the fetch log asks of a FetchError: what went wrong, with which HTTP status."""

    error_class = "parse"
    status_code = 200  # the document arrived; it just is not a feed
    retry_after_s: float | None = None


class ParserFailed(FeedParseError):
    """Reading the body raised what no reader should (a bug in ours or in feedparser, met by some body): to the
    source it is a failed parse all the same, a strike, never a job that dies and is run again at once."""

    error_class = "parser_error"


@dataclass(frozen=True, slots=True)
class ParsedEntry:
    external_id: str
    url: str | None  # None for an entry known only by its id (an Atom urn, say)
    title: str
    summary: str
    author: str | None
    published_at: datetime
    content: str | None = None  # the entry's full content as the feed gives it (content:encoded), HTML, unsanitized


@dataclass(frozen=True, slots=True)
class ParsedFeed:
    title: str | None
    site_url: str | None
    language: str | None
    entries: list[ParsedEntry] = field(default_factory=list)
    skipped: int = 0  # entries with neither a usable link nor an id
    ttl_minutes: str | None = None  # RSS <ttl>: the publisher's idea of how long to wait
    links: dict[str, str] = field(default_factory=dict)  # feed-level links by rel: hub, self (WebSub)
    bozo: str | None = None  # feedparser's complaint, when it still recovered entries


def strip_doctype(body: bytes) -> bytes:
    start = body.find(b"<!", 0, _PROLOG_BYTES)
    if start < 0 or body[start : start + 9].upper() != b"<!DOCTYPE":
        return body
    return _DOCTYPE.sub(b"", body, count=1)


def parse_feed(
    body: bytes, *, feed_url: str, content_type: str | None, fetched_at: datetime, limits: TextLimits
) -> ParsedFeed:
    """Blocking: call it in the parser thread (app/ingest/parser_thread.py). Any body ends in a ParsedFeed or a
    FeedParseError, never another exception."""
    try:
        return _parse_feed(body, feed_url=feed_url, content_type=content_type, fetched_at=fetched_at, limits=limits)
    except FeedParseError:
        raise
    except Exception as error:  # RecursionError, KeyError, ...: whatever a body provokes, it fails this parse only
        log.exception("parsing %d bytes of %s failed unexpectedly", len(body), feed_url)
        raise ParserFailed(f"the parser failed on this body: {type(error).__name__}: {error}"[:500]) from error


def _parse_feed(
    body: bytes, *, feed_url: str, content_type: str | None, fetched_at: datetime, limits: TextLimits
) -> ParsedFeed:
    meta, raw_entries, bozo = _read(body, feed_url, content_type)
    use_guids = guids_usable(raw_entries)
    entries: list[ParsedEntry] = []
    seen_ids: set[str] = set()
    for raw in raw_entries:
        entry = _entry(raw, feed_url=feed_url, fetched_at=fetched_at, limits=limits, use_guid=use_guids)
        if entry is None:
            continue
        if entry.external_id in seen_ids and entry.url and entry.url != entry.external_id:
            entry = replace(entry, external_id=entry.url)  # a GUID repeated for another URL: a different article
        seen_ids.add(entry.external_id)
        entries.append(entry)
    return ParsedFeed(
        title=html_to_text(meta.get("title") or "", limits.title) or None,
        site_url=normalized_or_none(meta.get("link"), feed_url),
        language=storable(str(meta.get("language") or "")) or None,
        entries=entries,
        skipped=len(raw_entries) - len(entries),
        bozo=bozo,
        ttl_minutes=meta.get("ttl") or None,
        links=_feed_links(meta, feed_url),
    )


def _read(body: bytes, feed_url: str, content_type: str | None) -> tuple[Any, list[Any], str | None]:
    """(feed metadata, raw entries, feedparser's complaint): JSON Feed by our reader, XML by feedparser."""
    if looks_like_json(body, content_type):
        try:
            meta, raw_entries = read_json_feed(body)
        except NotJsonFeed as error:
            raise FeedParseError(f"not a readable feed: {error}") from error
        return meta, raw_entries, None
    headers = {"content-type": content_type or "application/xml"}  # no base: normalize_url resolves links
    # Summaries become plain text and links are resolved by normalize_url: feedparser need not re-parse
    # embedded HTML to sanitize it or to resolve the URIs inside it.
    result = feedparser.parse(
        strip_doctype(body), response_headers=headers, sanitize_html=False, resolve_relative_uris=False
    )
    bozo = str(result.get("bozo_exception")) if result.get("bozo") else None
    if not result.entries and (bozo or not result.get("version")):
        raise FeedParseError(_describe_failure(body, bozo))
    return result.feed, list(result.entries), bozo


@dataclass(frozen=True, slots=True)
class TextLimits:
    title: int
    summary: int
    content: int = 1_000_000  # characters of an entry's full content kept (a longer one is cut, then sanitized)


def guids_usable(raw_entries: list[Any]) -> bool:
    """False when more than 5% of a document's GUIDs are missing or repeated (FreshRSS's rule): the publisher's
    ids then say nothing, and the entry's URL identifies it instead."""
    guids = [str(raw.get("id") or "").strip() for raw in raw_entries]
    unusable = sum(1 for g in guids if not g) + (len([g for g in guids if g]) - len({g for g in guids if g}))
    return unusable <= GUID_TOLERANCE * len(guids)


def _entry(raw: Any, *, feed_url: str, fetched_at: datetime, limits: TextLimits, use_guid: bool) -> ParsedEntry | None:
    """None for an entry with neither a usable link nor an id: nothing could ever point at it again."""
    url = normalized_or_none(raw.get("link"), feed_url)
    guid = storable(str(raw.get("id") or "")).strip()
    if url is None and not guid:
        return None
    content = _first_content(raw)
    summary = html_to_text(raw.get("summary") or content or "", limits.summary)
    title = html_to_text(raw.get("title", ""), limits.title) or _title_from(summary, limits.title) or url or guid
    return ParsedEntry(
        external_id=((guid if use_guid else "") or url or guid)[:2000],
        url=url,
        title=title,
        summary=summary,
        author=storable(str(raw.get("author") or "")) or None,
        published_at=_published(raw, fetched_at),
        content=storable(content[: limits.content]) if content else None,
    )


def _title_from(summary: str, limit: int) -> str:
    """An untitled entry (RSS allows them) is named by the start of its text."""
    return html_to_text(summary, min(limit, UNTITLED_TITLE_CHARS)) if summary else ""


def _feed_links(meta: Any, feed_url: str) -> dict[str, str]:
    links: dict[str, str] = {}
    for link in meta.get("links") or []:
        rel, href = link.get("rel"), normalized_or_none(link.get("href"), feed_url)
        if rel in ("hub", "self") and href and rel not in links:
            links[rel] = href
    return links


def _first_content(raw: Any) -> str | None:
    content = raw.get("content") or []
    return str(content[0].get("value", "")) if content else None


def _published(raw: Any, fetched_at: datetime) -> datetime:
    """published | updated | fetch time; a date in the future is clamped to the fetch time."""
    parsed: time.struct_time | None = raw.get("published_parsed") or raw.get("updated_parsed")
    if parsed is None:
        return fetched_at
    try:
        when = datetime.fromtimestamp(calendar.timegm(parsed), tz=UTC)
    except (OverflowError, ValueError, OSError):
        return fetched_at
    return min(when, fetched_at)


def _describe_failure(body: bytes, bozo: str | None) -> str:
    head = body[:512].lstrip().lower()
    if head.startswith((b"<!doctype html", b"<html")) or b"<html" in head:
        return "an HTML page, not a feed"
    if not body.strip():
        return "empty body"
    return f"not a readable feed: {bozo or 'no entries and no feed version'}"
