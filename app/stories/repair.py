"""Stories that lost articles (their source was deleted, or retention deleted old ones): counted, labelled and
represented again from the articles they still have, in the transaction that deleted them.

A story keeps its centroid (the terms of the articles it lost fade as others join; recomputing them would need each
article's weights as they were) and its times. A story left with no article is emptied rather than deleted: the
workers' copies of the clustering state learn of it on their next catch-up (app/stories/store.py forgets a story
whose article count is 0) and no write of theirs can bring it back; every read leaves it out. Both are stamped with
a new revision under the clustering lock, like any other write of clustering state, and announced to `storyUpdated`
subscribers as any change of a story is (an emptied story's update has no articles, and no story behind it).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import TextClause, text

from app.db.engine import Executor
from app.outbox import repository as outbox
from app.stories.state import STORY_TOPIC_SHARE
from app.stories.store import CLUSTERING_LOCK
from app.stories.updates import STORY_UPDATED_TOPIC

_REPAIR = text(f"""
    WITH members AS (
        SELECT a.cluster_id AS story_id, a.id, a.title, a.published_at, a.source_id, a.language, a.topics,
               coalesce(src.authority, 0) AS authority
        FROM articles a JOIN sources src ON src.id = a.source_id
        WHERE a.cluster_id = ANY(CAST(:stories AS bigint[]))
    ),
    sizes AS (
        SELECT story_id, count(*) AS size, array_agg(DISTINCT source_id) AS source_ids,
               coalesce(array_agg(DISTINCT language) FILTER (WHERE language IS NOT NULL), '{{}}') AS languages
        FROM members GROUP BY story_id
    ),
    counted AS (
        SELECT m.story_id, t.topic, count(*) AS n, sum(count(*)) OVER (PARTITION BY m.story_id) AS labels,
               row_number() OVER (PARTITION BY m.story_id ORDER BY count(*) DESC, t.topic) AS place
        FROM members m, unnest(m.topics) AS t(topic) GROUP BY m.story_id, t.topic
    ),
    labels AS (  -- app/stories/state.story_topics: the two most common, each on enough of those with a topic
        SELECT c.story_id, jsonb_object_agg(c.topic, c.n) AS topic_counts,
               coalesce(array_agg(c.topic ORDER BY c.place) FILTER (
                   WHERE c.place <= 2 AND c.n >= {STORY_TOPIC_SHARE} * least(s.size, c.labels)), '{{}}') AS topics
        FROM counted c JOIN sizes s USING (story_id) GROUP BY c.story_id
    ),
    best AS (  -- app/stories/state.Representative: the most authoritative outlet's, then the earliest
        SELECT DISTINCT ON (story_id) story_id, id, title FROM members
        ORDER BY story_id, authority DESC, published_at, id
    ),
    repaired AS (
        SELECT story.id, s.size, s.source_ids, s.languages, l.topic_counts, l.topics, b.id AS representative, b.title
        FROM unnest(CAST(:stories AS bigint[])) AS story(id)
        LEFT JOIN sizes s ON s.story_id = story.id LEFT JOIN labels l ON l.story_id = story.id
        LEFT JOIN best b ON b.story_id = story.id
    )
    UPDATE story_clusters AS sc SET
        article_count = coalesce(r.size, 0), source_ids = coalesce(r.source_ids, '{{}}'),
        source_count = cardinality(coalesce(r.source_ids, '{{}}')), languages = coalesce(r.languages, '{{}}'),
        topic_counts = coalesce(r.topic_counts, '{{}}'), topics = coalesce(r.topics, '{{}}'),
        primary_topic = r.topics[1], representative_article_id = r.representative,
        title = coalesce(r.title, sc.title),
        recent_arrivals = coalesce((SELECT jsonb_agg(e) FROM jsonb_array_elements(sc.recent_arrivals) AS e
                                    WHERE r.size IS NOT NULL AND (e ->> 1) <> ALL(CAST(:gone AS text[]))), '[]'),
        centroid = CASE WHEN r.size IS NULL THEN '{{}}' ELSE sc.centroid END,
        centroid_norm = CASE WHEN r.size IS NULL THEN 0 ELSE sc.centroid_norm END,
        is_breaking = sc.is_breaking AND r.size IS NOT NULL,
        revision = :revision
    FROM repaired r WHERE sc.id = r.id
    RETURNING sc.id, sc.article_count, sc.source_count, sc.last_updated_at
""")


@dataclass(frozen=True, slots=True)
class Repair:
    stories: int  # stories that lost articles and were counted again
    emptied: int  # of which, stories left with no article


async def repair_stories(db: Executor, story_ids: list[int], gone_sources: list[int]) -> Repair:
    """Stories `story_ids` counted again from their remaining articles; `gone_sources` leave their recent arrivals.
    The caller holds the clustering lock (`lock_clustering`) and has deleted the articles in this transaction."""
    if not story_ids:
        return Repair(0, 0)
    revision = await db.scalar(text("SELECT nextval('story_revision_seq')"))
    rows = (await db.execute(_REPAIR, {"stories": sorted(set(story_ids)), "revision": revision,
                                       "gone": [str(s) for s in gone_sources]})).all()  # fmt: skip
    await outbox.add_once(db, STORY_UPDATED_TOPIC, {f"{STORY_UPDATED_TOPIC}:{row.id}:{revision}": {
        "story_id": row.id, "article_count": row.article_count, "source_count": row.source_count,
        "last_updated_at": row.last_updated_at.isoformat(), "revision": revision,
    } for row in rows})  # fmt: skip
    return Repair(len(rows), sum(1 for row in rows if row.article_count == 0))


@dataclass(frozen=True, slots=True)
class ArticlesDeleted:
    articles: int  # articles deleted
    stories: frozenset[int]  # stories that lost some and were repaired
    emptied: int  # of which, stories left with no article


async def delete_articles(db: Executor, doomed: TextClause, params: dict[str, object],
                          gone_sources: list[int]) -> ArticlesDeleted:  # fmt: skip
    """Deletes the articles `doomed` picks (a DELETE returning each one's `cluster_id`) and repairs their stories, in
    the caller's transaction, holding the clustering lock until it ends. Read events go with the articles and copies
    stop pointing at them (foreign keys); the articles' delete trigger tells the search index."""
    await lock_clustering(db)
    clusters = list(await db.scalars(doomed, params))
    stories = frozenset(story for story in clusters if story is not None)
    repair = await repair_stories(db, sorted(stories), gone_sources)
    return ArticlesDeleted(len(clusters), stories, repair.emptied)


async def lock_clustering(db: Executor) -> None:
    """Until the transaction ends, no worker clusters: stories change under one writer at a time."""
    await db.execute(CLUSTERING_LOCK)
