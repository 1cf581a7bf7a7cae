"""Archiving a fetch as it succeeds, and reading one back: what was fetched and what it produced."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache
from typing import Any

from prometheus_client import Counter

from app.archive import repository
from app.archive.compression import compress, decompress
from app.db.engine import Executor
from app.ingest.fetch import FetchedFeed
from app.settings import Settings

log = logging.getLogger(__name__)
ARCHIVED_BYTES = Counter("newsagg_fetch_archive_bytes", "Feed bodies archived, before and after zstd.", ["form"])
SKIPPED = Counter("newsagg_fetch_archive_skipped", "Fetched or pushed bodies not archived, by why.", ["reason"])
HOUR = timedelta(hours=1)


async def keep(
    db: Executor, settings: Settings, fetch_id: int, source_id: int, fetched: FetchedFeed, new_ids: Sequence[int]
) -> None:
    """In the fetch's own transaction: its body compressed, and the articles it stored linked to it. A body of
    ~100 KB compresses in well under a millisecond at the default level, so it is done here, not in a thread."""
    await repository.link_articles(db, fetch_id, new_ids, repository.NEW)
    if not settings.fetch_archive or fetched.not_modified:
        return
    if await _over_hourly_cap(db, settings, source_id):
        return
    reference = await repository.current_reference(db, source_id)
    if reference is None or reference.followers + 1 >= settings.fetch_archive_reference_every:
        reference_id, body = None, compress(fetched.body, level=settings.fetch_archive_level)
    else:
        against = _reference_body(reference.id, reference.body)
        reference_id, body = reference.id, compress(fetched.body, level=settings.fetch_archive_level, reference=against)
    await repository.add(db, id=fetch_id, source_id=source_id, url=fetched.final_url, status_code=fetched.status_code,
                         headers=fetched.headers, raw_bytes=len(fetched.body), reference_id=reference_id,
                         body=body)  # fmt: skip
    ARCHIVED_BYTES.labels("raw").inc(len(fetched.body))
    ARCHIVED_BYTES.labels("stored").inc(len(body))


async def _over_hourly_cap(db: Executor, settings: Settings, source_id: int) -> bool:
    """The source archived its hour's worth already (a hub pushing without end): this body is not kept."""
    cap = settings.fetch_archive_per_source_per_hour
    if not cap:
        return False
    if await repository.archived_within(db, source_id, HOUR) < cap:
        return False
    SKIPPED.labels("over_hourly_cap").inc()
    log.debug("source %d archived %d bodies in the last hour already: this one is not kept", source_id, cap)
    return True


@lru_cache(maxsize=256)  # a source's reference serves its next fetches: decompressed once per process
def _reference_body(reference_id: int, frame: bytes) -> bytes:
    return decompress(frame)


def body_of(row: Any) -> bytes:
    """An archived row's body as received (repository.archived's row). Blocking: a thread for many."""
    return decompress(row.body, decompress(row.reference) if row.reference_id is not None else None)


@dataclass(frozen=True, slots=True)
class FetchReport:
    fetch: Any  # the fetch log row, its source and its archive's columns (repository.fetch_row)
    produced: list[Any]  # change, id, title, url of each article it stored or changed


async def show(db: Executor, fetch_id: int) -> FetchReport | None:
    row = await repository.fetch_row(db, fetch_id)
    return None if row is None else FetchReport(row, await repository.produced(db, fetch_id))


async def archived_body(db: Executor, fetch_id: int) -> bytes | None:
    """The body as it was received, or None when the fetch has none archived."""
    row = await repository.archived(db, fetch_id)
    return None if row is None else body_of(row)
