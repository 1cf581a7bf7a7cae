"""Every query on stories for reading: by id (merged ones resolve to where they went), newest, coverage."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select, tuple_

from app.articles.models import Article
from app.db.engine import Executor
from app.stories.models import StoryCluster


async def stories_by_ids(db: Executor, ids: Sequence[int]) -> dict[int, StoryCluster]:
    """Requested id -> the story it is now (a merged story's id resolves to the one it was merged into)."""
    found: dict[int, StoryCluster] = {}
    pending = {i: i for i in ids}  # requested id -> id to look up
    for _ in range(10):  # merge chains are short; bounded anyway
        if not pending:
            break
        rows = {
            s.id: s for s in await db.scalars(select(StoryCluster).where(StoryCluster.id.in_(set(pending.values()))))
        }
        following = {}
        for requested, current in pending.items():
            story = rows.get(current)
            if story is None:
                continue
            if story.merged_into_id is None:
                found[requested] = story
            else:
                following[requested] = story.merged_into_id
        pending = following
    return found


async def latest_stories(db: Executor, *, limit: int, after: tuple[datetime, int] | None,
                         topics: Sequence[str] = (), languages: Sequence[str] = ()) -> list[StoryCluster]:  # fmt: skip
    """Most recently updated first; about any of `topics`, with an article in any of `languages`."""
    query = (
        select(StoryCluster)
        .where(StoryCluster.merged_into_id.is_(None))
        .order_by(StoryCluster.last_updated_at.desc(), StoryCluster.id.desc())
        .limit(limit)
    )
    if topics:
        query = query.where(StoryCluster.topics.overlap(list(topics)))
    if languages:
        query = query.where(StoryCluster.languages.overlap(list(languages)))
    if after is not None:
        query = query.where(tuple_(StoryCluster.last_updated_at, StoryCluster.id) < tuple_(*after))
    return list(await db.scalars(query))


async def coverage(db: Executor, story_id: int, *, limit: int) -> list[Article]:
    """The story's articles, newest first: its full coverage."""
    return list(await db.scalars(
        select(Article).where(Article.cluster_id == story_id)
        .order_by(Article.published_at.desc(), Article.id.desc()).limit(limit)))  # fmt: skip
