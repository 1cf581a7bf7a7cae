"""Archiving a fetch as it succeeds, and reading one back: what was fetched and what it produced."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import Any, TypeVar

from prometheus_client import Counter

from app.archive import repository
from app.archive.compression import compress, decompress, stream
from app.archive.references import Reference, ReferenceCache, prepare
from app.db.engine import Executor
from app.ingest.fetch import FetchedFeed
from app.ingest.parser_thread import in_parser_thread
from app.settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")
ARCHIVED_BYTES = Counter("newsagg_fetch_archive_bytes", "Feed bodies archived, before and after zstd.", ["form"])
REFERENCE_READS = Counter("newsagg_fetch_archive_reference_reads", "Reference bodies wanted, by where they came from.",
                          ["found"])  # fmt: skip
# Below this a body is compressed on the loop: ~0.3 ms at level 3, less than the hop to a thread and back
OFF_LOOP_BYTES = 64 * 1024

_cache: ReferenceCache | None = None


def reference_cache(settings: Settings) -> ReferenceCache:
    """The process's reference cache (one per process: references are shared by every source's fetches)."""
    global _cache
    budget = int(settings.fetch_archive_reference_cache_mb * 1024 * 1024)
    if _cache is None or _cache.budget_bytes != budget:
        _cache = ReferenceCache(budget)
    return _cache


def forget_references() -> None:
    """Only for a database whose ids start again (tests truncate with RESTART IDENTITY): in any other, an archived
    body's id is never given to another, so a cached reference is never stale."""
    global _cache
    _cache = None


SKIPPED = Counter("newsagg_fetch_archive_skipped", "Fetched or pushed bodies not archived, by why.", ["reason"])
HOUR = timedelta(hours=1)


async def keep(
    db: Executor, settings: Settings, fetch_id: int, source_id: int, fetched: FetchedFeed, new_ids: Sequence[int]
) -> None:
    """In the fetch's own transaction: its body compressed (a large one in the parser thread, off the loop), and the
    articles it stored linked to it."""
    await repository.link_articles(db, fetch_id, new_ids, repository.NEW)
    if not settings.fetch_archive or fetched.not_modified:
        return
    cap, every = settings.fetch_archive_per_source_per_hour, settings.fetch_archive_reference_every
    state = await repository.archive_state(db, source_id, window=HOUR, cap=cap, every=every)
    if _over_hourly_cap(state, cap, source_id):
        return
    level = settings.fetch_archive_level
    against: Reference | None = None
    if state.reference_id is not None and state.followers + 1 < every:
        try:
            against = await reference(db, settings, state.reference_id)
        except (ValueError, LookupError) as error:  # damaged, or pruned since: this body is stored whole instead
            log.warning("archive: reference body %s of source %s is damaged (%s)", state.reference_id, source_id,
                        error)  # fmt: skip
    dictionary = against.dictionary if against else None
    body = await off_loop_if_large(len(fetched.body), partial(compress, fetched.body, level=level,
                                                               reference=dictionary))  # fmt: skip
    await repository.add(db, id=fetch_id, source_id=source_id, url=fetched.final_url, status_code=fetched.status_code,
                         headers=fetched.headers, raw_bytes=len(fetched.body),
                         reference_id=against.id if against else None, body=body)  # fmt: skip
    ARCHIVED_BYTES.labels("raw").inc(len(fetched.body))
    ARCHIVED_BYTES.labels("stored").inc(len(body))


async def reference(db: Executor, settings: Settings, reference_id: int) -> Reference:
    """A reference body and its dictionary: from the process's cache, else read once and kept. DamagedBody when its
    frame does not decompress, LookupError when the row is gone."""
    cache = reference_cache(settings)
    if (found := cache.get(reference_id)) is not None:
        REFERENCE_READS.labels("cache").inc()
        return found
    REFERENCE_READS.labels("database").inc()
    frame, raw_bytes = await repository.reference_frame(db, reference_id)
    made = await off_loop_if_large(raw_bytes, partial(prepare, reference_id, frame, level=settings.fetch_archive_level))
    return cache.put(made)


def _over_hourly_cap(state: repository.ArchiveState, cap: int, source_id: int) -> bool:
    """The source archived its hour's worth already (a hub pushing without end): this body is not kept."""
    if not cap or state.recent < cap:
        return False
    SKIPPED.labels("over_hourly_cap").inc()
    log.debug("source %d archived %d bodies in the last hour already: this one is not kept", source_id, cap)
    return True


async def off_loop_if_large(raw_bytes: int, work: Callable[[], T]) -> T:
    """zstd work on a body of `raw_bytes`: in the parser thread when large, else at once on the loop."""
    return await in_parser_thread(work) if raw_bytes >= OFF_LOOP_BYTES else work()


def body_of(row: Any, against: Reference | None) -> bytes:
    """An archived row's body as received (`against`: its reference, for a row compressed against one). Blocking."""
    return decompress(row.body, against.dictionary if against else None)


@dataclass(frozen=True, slots=True)
class FetchReport:
    fetch: Any  # the fetch log row, its source and its archive's columns (repository.fetch_row)
    produced: list[Any]  # change, id, title, url of each article it stored or changed


async def show(db: Executor, fetch_id: int) -> FetchReport | None:
    row = await repository.fetch_row(db, fetch_id)
    return None if row is None else FetchReport(row, await repository.produced(db, fetch_id))


@dataclass(frozen=True, slots=True)
class ArchivedBody:
    raw_bytes: int
    chunks: Iterator[bytes]  # the body as received, in chunks (compression.CHUNK); blocking, DamagedBody if damaged


async def archived_body(db: Executor, settings: Settings, fetch_id: int) -> ArchivedBody | None:
    """The body as it was received, streamed from its frame (never whole in memory), or None when the fetch has
    none archived."""
    row = await repository.archived(db, fetch_id)
    if row is None:
        return None
    against = await reference(db, settings, row.reference_id) if row.reference_id is not None else None
    return ArchivedBody(row.raw_bytes, stream(row.body, against.dictionary if against else None))


@dataclass(frozen=True, slots=True)
class Readable:
    row: Any  # an archived fetch (repository.archived_rows)
    against: Reference | None  # the body it is compressed against; None for a body stored whole


@dataclass(frozen=True, slots=True)
class Unreadable:
    row: Any
    reason: str  # why its reference body could not be read (damaged, or pruned since)


async def archived_bodies(
    db: Executor, settings: Settings, rows: Sequence[Any]
) -> AsyncIterator[Readable | Unreadable]:
    """Each row with its reference read, or, when that reference is damaged or gone, marked unreadable with why."""
    for row in rows:
        if row.reference_id is None:
            yield Readable(row, None)
            continue
        try:
            yield Readable(row, await reference(db, settings, row.reference_id))
        except (ValueError, LookupError) as error:  # DamagedBody is a ValueError
            yield Unreadable(row, f"its reference body {row.reference_id}: {error}")
