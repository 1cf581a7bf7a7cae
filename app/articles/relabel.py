"""Topics labelled again by the shipped classifier: `newsagg topics relabel`, for articles an earlier one labelled
(before the model was retrained, or when an article in a language it does not read was given a guess rather than no
topic). In id order, a batch per transaction; only articles whose topics change are written, under the clustering
lock, and their stories are counted again (app/stories/repair.py); the search index hears of it from the articles'
update trigger."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.stories.repair import lock_clustering, repair_stories
from app.topics.classifier import topics_of

BATCH = 500

_READ = text("""
    SELECT id, title, summary, language, topics FROM articles
    WHERE simhash IS NOT NULL AND id > :after ORDER BY id LIMIT :limit
""")
_WRITE = text("""
    UPDATE articles AS a SET topics = string_to_array(f.topics, ',')::varchar[]
    FROM unnest(CAST(:id AS bigint[]), CAST(:topics AS text[])) AS f(id, topics)
    WHERE a.id = f.id RETURNING a.cluster_id
""")


@dataclass(frozen=True, slots=True)
class Relabelled:
    read: int  # understood articles read
    changed: int  # of which, articles whose topics changed
    stories: int  # stories counted again


def _changed(rows: Sequence[Any]) -> dict[int, list[str]]:
    found = topics_of([(r.title, r.summary) for r in rows], [r.language for r in rows])
    return {r.id: topics for r, topics in zip(rows, found, strict=True) if topics != list(r.topics)}


async def _write(connection: AsyncConnection, found: dict[int, list[str]]) -> set[int]:
    """The new topics, and the stories they change counted again; returns those stories."""
    await lock_clustering(connection)
    params = {"id": list(found), "topics": [",".join(topics) for topics in found.values()]}
    stories = {story for story in await connection.scalars(_WRITE, params) if story is not None}
    await repair_stories(connection, sorted(stories), [])
    return stories


async def relabel(
    engine: AsyncEngine, *, batch: int = BATCH, progress: Callable[[int], None] | None = None
) -> Relabelled:
    read, changed, stories, after = 0, 0, set[int](), 0
    while True:
        async with engine.begin() as connection:
            rows = (await connection.execute(_READ, {"after": after, "limit": batch})).all()
            if not rows:
                return Relabelled(read, changed, len(stories))
            found = await asyncio.to_thread(_changed, rows)
            stories |= await _write(connection, found) if found else set()
        read, changed, after = read + len(rows), changed + len(found), rows[-1].id
        if progress:
            progress(read)
