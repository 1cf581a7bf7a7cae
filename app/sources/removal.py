"""Deleting a source and its articles, a bounded batch per transaction: the retention-safe path.

A source's articles are deleted `batch` at a time, oldest id first, each batch in a transaction of its own that
also repairs the stories it took articles from (app/stories/repair.py: counts, sources, labels, a new representative,
emptied stories left out of every read). So however many articles a source has, no transaction holds its locks for
long, and between two batches every story is consistent. The rest follows from the schema:
- read events of those articles go with them, copies of them stop pointing at them (indexed foreign keys, migration
  0013, so each is a lookup, not a scan);
- the articles' delete trigger writes a `search` outbox event with their ids, and the index sync deletes them from
  Meilisearch (on PostgreSQL alone the rows are simply gone);
- the source is paused first, so no crawl is started while its articles go; the last transaction locks its row (a
  fetch already under way cannot add articles past it), deletes whatever that fetch stored, then the source with its
  schedule, fetch log, follows and mutes.
Interrupted (the request cancelled, the database gone), the source is left paused with the articles not yet deleted
and every story consistent; deleting it again finishes the work.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import delete, select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.sources.errors import SourceErrorCode, SourceRejected
from app.sources.models import Source, SourceStatus
from app.stories.repair import delete_articles

_DELETE_BATCH = text("""
    WITH doomed AS (SELECT id FROM articles WHERE source_id = :source ORDER BY id LIMIT :batch FOR UPDATE)
    DELETE FROM articles AS a USING doomed WHERE a.id = doomed.id
    RETURNING a.cluster_id
""")


@dataclass
class Removal:
    articles: int = 0  # articles deleted with the source
    stories: set[int] = field(default_factory=set)  # stories that lost articles and were repaired
    emptied: int = 0  # of which, stories left with no article


async def delete_source(db: AsyncEngine, source_id: int, *, batch: int) -> Removal:
    async with db.begin() as connection:
        paused = await connection.scalar(update(Source).where(Source.id == source_id)
                                          .values(status=SourceStatus.PAUSED).returning(Source.id))  # fmt: skip
    if paused is None:
        raise SourceRejected(SourceErrorCode.NOT_FOUND, "no such source", "id")
    removal = Removal()
    while True:
        async with db.begin() as connection:
            deleted = await _delete_batch(connection, source_id, batch, removal)
        if deleted < batch:
            break
    async with db.begin() as connection:
        await connection.execute(select(Source.id).where(Source.id == source_id).with_for_update())
        while await _delete_batch(connection, source_id, batch, removal):  # stored by a fetch under way
            pass
        await connection.execute(delete(Source).where(Source.id == source_id))
    return removal


async def _delete_batch(connection: AsyncConnection, source_id: int, batch: int, removal: Removal) -> int:
    """One batch deleted and its stories repaired, added to `removal`; how many articles it deleted."""
    deleted = await delete_articles(connection, _DELETE_BATCH, {"source": source_id, "batch": batch}, [source_id])
    removal.articles += deleted.articles
    removal.stories |= deleted.stories
    removal.emptied += deleted.emptied
    return deleted.articles
