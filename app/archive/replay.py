"""Replay: a source's archived bodies parsed again by today's parser, and the articles stored as that parser reads them.

Idempotent: an entry already stored with the same text changes nothing, so a second replay stores nothing (and its
summary says so). Within one replay the first archived version of an entry wins, as at ingest (content is
insert-once): an entry a publisher edited between two fetches is compared with the version of the earliest fetch
replayed, not flipped through every version. What replay stores goes on as ingest's does: new articles are announced,
understood and clustered into stories at once (one clustering state for the whole replay, as a worker keeps one),
each counted as an arrival towards its story's trending score (when the replay has Redis); a stored article whose
text changed is understood again (language, topics, entities, fingerprint, copy mark; the search index hears of it
through the articles trigger), and its story is labelled again from its articles (topics, languages, headline; its
subscribers hear of it).

Streamed in batches: a batch is at most `replay_batch_fetches` fetches and `replay_batch_mb` of bodies as received
(one larger body alone is a batch of its own), listed by keyset and read then, and each body is decompressed only
while it is parsed. A damaged body (a bad frame, a missing or damaged reference) is reported with its fetch id,
counted and skipped; the replay goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from prometheus_client import Counter
from redis.asyncio import Redis
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.archive import repository
from app.archive.compression import DamagedBody
from app.archive.references import Reference
from app.archive.service import Unreadable, archived_bodies, body_of
from app.articles import repository as articles
from app.articles.fingerprints import content_hash
from app.articles.understanding import understand_articles
from app.ingest.events import announce_articles_added
from app.ingest.parse import FeedParseError, ParsedEntry, TextLimits, parse_feed
from app.ingest.parser_thread import in_parser_thread
from app.ingest.refresh import article_rows
from app.settings import Settings
from app.stories.repair import lock_clustering, repair_stories
from app.stories.service import cluster_articles
from app.stories.store import ClusteringCache
from app.trending.store import record_arrivals

log = logging.getLogger(__name__)
REPLAY_FAILURES = Counter("newsagg_replay_failures", "Archived fetches a replay could not read, by why.", ["kind"])
Progress = Callable[[int, int], None]  # fetches replayed so far, of all
SHOWN = 20  # changes and failures listed in a summary


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


@dataclass(frozen=True, slots=True)
class Failure:
    fetch_id: int
    kind: str  # damaged (the archived body does not decompress) | parse (today's parser cannot read it)
    reason: str


@dataclass
class ReplaySummary:
    fetches: int = 0  # archived fetches replayed
    items: int = 0  # entries they hold (each counted once, in the earliest fetch holding it)
    new: int = 0  # articles stored that were not
    updated: int = 0  # stored articles whose text today's parser reads otherwise
    unchanged: int = 0
    parse_errors: int = 0  # bodies today's parser cannot read
    damaged: int = 0  # bodies that do not decompress (a bad frame, a missing or damaged reference)
    clustered: int = 0  # new articles placed in a story
    understood_again: int = 0  # updated articles understood anew
    stories_repaired: int = 0  # stories holding updated articles, labelled again
    batches: int = 0
    largest_batch_bytes: int = 0  # of bodies as received, in one batch
    changes: list[Change] = field(default_factory=list)  # the first SHOWN updates
    failures: list[Failure] = field(default_factory=list)  # the first SHOWN fetches not read

    @property
    def changed_nothing(self) -> bool:
        return self.new == 0 and self.updated == 0


async def replay(
    db: AsyncEngine,
    settings: Settings,
    source_id: int,
    *,
    since: datetime,
    progress: Progress | None = None,
    redis: Redis | None = None,
) -> ReplaySummary:
    """`redis`: where trending counts arrivals (without it, what the replay adds to stories is not counted there)."""
    async with db.connect() as connection:
        if not await repository.source_exists(connection, source_id):
            raise SourceNotFound(f"no source {source_id}")
        total = await repository.archived_count(connection, source_id, since=since)
    done, seen, stories = ReplaySummary(), set[str](), _Stories(ClusteringCache(), redis)
    after: tuple[datetime, int] | None = None
    while True:
        try:
            batch = await _next_batch(db, settings, source_id, since, after)
            if not batch:
                break
            counted = ReplaySummary()  # what this batch did, added to `done` once it committed
            parsed = await _parse_batch(db, settings, [f.id for f in batch], counted)
            async with db.begin() as connection:
                stored = [await _store(connection, source_id, fetch_id, _first_versions(entries, seen), counted)
                          for fetch_id, entries in parsed]  # fmt: skip
            after = (batch[-1].fetched_at, batch[-1].id)
            _add(done, counted)
            done.batches += 1
            done.largest_batch_bytes = max(done.largest_batch_bytes, sum(f.raw_bytes for f in batch))
            done.fetches += len(batch)
            await _follow_up(db, [i for new, _ in stored for i in new], [i for _, upd in stored for i in upd], done,
                             stories)  # fmt: skip
        except (SQLAlchemyError, OSError) as error:  # a connection lost, refused, reset
            raise ReplayInterrupted(done, max(total, done.fetches), error) from error
        if progress is not None:
            progress(done.fetches, max(total, done.fetches))
    return done


async def _next_batch(
    db: AsyncEngine, settings: Settings, source_id: int, since: datetime, after: tuple[datetime, int] | None
) -> list[repository.Listed]:
    """The next fetches to replay, as many as fit in the batch's byte budget (at least one)."""
    async with db.connect() as connection:
        listed = await repository.archived_page(connection, source_id, since=since, after=after,
                                                limit=settings.replay_batch_fetches)  # fmt: skip
    budget, size = settings.replay_batch_mb * 1024 * 1024, 0
    taken: list[repository.Listed] = []
    for fetch in listed:
        if taken and size + fetch.raw_bytes > budget:
            break
        taken.append(fetch)
        size += fetch.raw_bytes
    return taken


async def _parse_batch(
    db: AsyncEngine, settings: Settings, fetch_ids: list[int], done: ReplaySummary
) -> list[tuple[int, list[ParsedEntry]]]:
    """Each fetch's entries as today's parser reads them; the fetches it cannot read reported and left out."""
    limits = TextLimits(title=settings.title_max_chars, summary=settings.summary_max_chars)
    parsed = []
    async with db.connect() as connection:
        rows = await repository.archived_rows(connection, fetch_ids)  # those pruned since they were listed: gone
        async for body in archived_bodies(connection, settings, rows):
            if isinstance(body, Unreadable):
                _failed(done, body.row.id, "damaged", body.reason)
                continue
            try:
                parsed.append((body.row.id, await in_parser_thread(_parse, body.row, body.against, limits)))
            except DamagedBody as error:
                _failed(done, body.row.id, "damaged", str(error))
            except FeedParseError as error:
                _failed(done, body.row.id, "parse", str(error))
    return parsed


def _parse(row: Any, against: Reference | None, limits: TextLimits) -> list[ParsedEntry]:
    """In the parser thread: the body decompressed only for as long as it is parsed."""
    return parse_feed(body_of(row, against), feed_url=row.url, content_type=row.headers.get("content-type"),
                      fetched_at=row.fetched_at, limits=limits).entries  # fmt: skip


def _add(done: ReplaySummary, batch: ReplaySummary) -> None:
    """A committed batch's counts and first changes and failures added to the replay's."""
    for name in ("items", "new", "updated", "unchanged", "parse_errors", "damaged"):
        setattr(done, name, getattr(done, name) + getattr(batch, name))
    done.changes += batch.changes[: SHOWN - len(done.changes)]
    done.failures += batch.failures[: SHOWN - len(done.failures)]


def _failed(done: ReplaySummary, fetch_id: int, kind: str, reason: str) -> None:
    log.warning("replay: fetch %s not read (%s): %s", fetch_id, kind, reason)
    REPLAY_FAILURES.labels(kind).inc()
    if kind == "damaged":
        done.damaged += 1
    else:
        done.parse_errors += 1
    if len(done.failures) < SHOWN:
        done.failures.append(Failure(fetch_id, kind, reason[:200]))


async def _store(
    connection: AsyncConnection, source_id: int, fetch_id: int, entries: list[ParsedEntry], done: ReplaySummary
) -> tuple[list[int], list[int]]:
    """(new article ids, updated article ids)."""
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
            if len(done.changes) < SHOWN:
                done.changes.append(Change(fetch_id, was.id, fields))
    await repository.update_texts(connection, changed)
    await repository.link_articles(connection, fetch_id, list(changed), repository.UPDATED)
    done.new += len(inserted)
    done.updated += len(changed)
    done.unchanged += len(entries) - len(inserted) - len(changed)  # the same text, or a URL another source holds
    return inserted, list(changed)


@dataclass(frozen=True, slots=True)
class _Stories:
    """What a replay's batches share, as a worker's jobs do: the clustering state (read once, then only what others
    changed) and where trending counts arrivals."""

    cache: ClusteringCache
    redis: Redis | None


async def _follow_up(
    db: AsyncEngine, new_ids: list[int], updated_ids: list[int], done: ReplaySummary, stories: _Stories
) -> None:
    """What ingest's understanding job does after a fetch, for a batch's new articles (understood, then clustered
    into stories now rather than by the worker's sweep, and counted as arrivals), and the same understanding again
    for updated ones."""
    now = datetime.now(UTC)
    if new_ids:
        await understand_articles(db, new_ids, now=now)
        placed = await cluster_articles(db, new_ids, stories.cache, flush_vocabulary=True)
        if stories.redis is not None:
            await record_arrivals(stories.redis, placed, datetime.now(UTC))  # logs, never raises, if Redis fails
        done.clustered += len(placed)
    if updated_ids:
        await understand_articles(db, updated_ids, now=now, again=True)
        done.understood_again += len(updated_ids)
        async with db.begin() as connection:  # their stories' topics, languages and headline from the new labels
            await lock_clustering(connection)
            held = await repository.stories_of(connection, updated_ids)
            done.stories_repaired += (await repair_stories(connection, held, [])).stories


def _first_versions(entries: list[ParsedEntry], seen: set[str]) -> list[ParsedEntry]:
    """The entries not seen before, in this fetch or an earlier one; of an entry listed twice in one document, the
    first (the version ingest stored: a second listing conflicts with it and is dropped)."""
    first = []
    for entry in entries:
        if entry.external_id not in seen:
            seen.add(entry.external_id)
            first.append(entry)
    return first
