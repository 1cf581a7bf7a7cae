"""Replay: a source's archived bodies parsed again by today's parser, and the articles stored as that parser reads them.

Idempotent: an entry already stored with the same text changes nothing, so a second replay stores nothing. Within one
replay the first archived version of an entry wins, as at ingest (content is insert-once): an entry a publisher edited
between two fetches is compared with the version of the earliest fetch replayed, not flipped through every version.
New articles are announced like ingest's; the worker's sweep of unclustered articles understands and clusters them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.archive import repository
from app.archive.compression import DamagedBody
from app.archive.service import body_of
from app.articles import repository as articles
from app.articles.fingerprints import content_hash
from app.ingest.events import announce_articles_added
from app.ingest.parse import FeedParseError, ParsedEntry, TextLimits, parse_feed
from app.ingest.refresh import article_rows
from app.settings import Settings

Progress = Callable[[int, int], None]  # fetches replayed so far, of all
SHOWN_CHANGES = 20


class SourceNotFound(LookupError):
    pass


class ReplayInterrupted(RuntimeError):
    """The database went away mid-replay: the fetches replayed before are stored (each in its own transaction), the
    one it was in is not; running the replay again finishes it (it is idempotent)."""

    def __init__(self, done: ReplaySummary, total: int, cause: Exception) -> None:
        super().__init__(f"the database went away after {done.fetches:,} of {total:,} archived fetches "
                         f"({type(cause).__name__}: {cause})")  # fmt: skip
        self.done, self.total = done, total


@dataclass(frozen=True, slots=True)
class Change:
    fetch_id: int
    article_id: int
    fields: tuple[str, ...]  # title, summary, author


@dataclass
class ReplaySummary:
    fetches: int = 0  # archived fetches parsed again
    items: int = 0  # entries they hold (each counted once, in the earliest fetch holding it)
    new: int = 0  # articles stored that were not
    updated: int = 0  # stored articles whose text today's parser reads otherwise
    unchanged: int = 0
    parse_errors: int = 0  # bodies today's parser cannot read (or damaged rows)
    changes: list[Change] = field(default_factory=list)  # the first SHOWN_CHANGES updates


async def replay(
    db: AsyncEngine, settings: Settings, source_id: int, *, since: datetime, progress: Progress | None = None
) -> ReplaySummary:
    async with db.connect() as connection:
        if not await repository.source_exists(connection, source_id):
            raise SourceNotFound(f"no source {source_id}")
        fetch_ids = await repository.archived_ids(connection, source_id, since=since)
    done, seen = ReplaySummary(), set[str]()
    limits = TextLimits(title=settings.title_max_chars, summary=settings.summary_max_chars)
    for number, fetch_id in enumerate(fetch_ids, 1):
        try:
            await _replay_one(db, source_id, fetch_id, limits, seen, done)
        except (SQLAlchemyError, OSError) as error:  # a connection lost, refused, reset
            raise ReplayInterrupted(done, len(fetch_ids), error) from error
        if progress is not None:
            progress(number, len(fetch_ids))
    return done


async def _replay_one(db: AsyncEngine, source_id: int, fetch_id: int, limits: TextLimits, seen: set[str],
                      done: ReplaySummary) -> None:  # fmt: skip
    """One fetch parsed again and stored in one transaction; `done` counts it only once that committed."""
    entries = await _parse_again(db, fetch_id, limits)
    if entries is None:
        done.fetches += 1
        done.parse_errors += 1
        return
    fresh = _first_versions(entries, seen)
    counted = ReplaySummary()
    async with db.begin() as connection:
        await _store(connection, source_id, fetch_id, fresh, counted)
    seen.update(entry.external_id for entry in fresh)
    done.fetches += 1
    for name in ("items", "new", "updated", "unchanged"):
        setattr(done, name, getattr(done, name) + getattr(counted, name))
    done.changes += counted.changes[: SHOWN_CHANGES - len(done.changes)]


async def _parse_again(db: AsyncEngine, fetch_id: int, limits: TextLimits) -> list[ParsedEntry] | None:
    """The fetch's entries as today's parser reads them; None when it cannot (or the row is damaged)."""
    async with db.connect() as connection:
        row = await repository.archived(connection, fetch_id)
    if row is None:  # pruned since the list was read
        return []
    content_type = row.headers.get("content-type")

    def parse() -> list[ParsedEntry]:
        body = body_of(row)
        return parse_feed(body, feed_url=row.url, content_type=content_type, fetched_at=row.fetched_at,
                          limits=limits).entries  # fmt: skip

    try:
        return await asyncio.to_thread(parse)
    except (FeedParseError, DamagedBody):
        return None


async def _store(
    connection: AsyncConnection, source_id: int, fetch_id: int, entries: list[ParsedEntry], done: ReplaySummary
) -> None:
    done.items += len(entries)
    stored = await repository.stored_texts(connection, source_id, [e.external_id for e in entries])
    fresh = [e for e in entries if e.external_id not in stored]
    inserted = [a.id for a in await articles.insert_new(connection, article_rows(source_id, fresh))]
    await repository.link_articles(connection, fetch_id, inserted, repository.NEW)
    await announce_articles_added(connection, source_id, inserted)
    changed: dict[int, tuple[str, str, str | None, int]] = {}
    for entry in entries:
        if (was := stored.get(entry.external_id)) is None:
            continue
        fields = tuple(name for name in ("title", "summary", "author") if getattr(entry, name) != getattr(was, name))
        if fields:
            changed[was.id] = (entry.title, entry.summary, entry.author, content_hash(entry.title, entry.summary))
            if len(done.changes) < SHOWN_CHANGES:
                done.changes.append(Change(fetch_id, was.id, fields))
    await repository.update_texts(connection, changed)
    await repository.link_articles(connection, fetch_id, list(changed), repository.UPDATED)
    done.new += len(inserted)
    done.updated += len(changed)
    done.unchanged += len(entries) - len(inserted) - len(changed)  # the same text, or a URL another source holds


def _first_versions(entries: list[ParsedEntry], seen: set[str]) -> list[ParsedEntry]:
    """The entries not seen in an earlier fetch (`seen` is left as it is); of an entry listed twice in one document,
    the first (the version ingest stored: a second listing conflicts with it and is dropped)."""
    first, here = [], set[str]()
    for entry in entries:
        if entry.external_id not in seen and entry.external_id not in here:
            here.add(entry.external_id)
            first.append(entry)
    return first
