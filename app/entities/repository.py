"""Every query on article entities."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text

from app.db.engine import Executor
from app.entities.extractor import Entity

NAME_CHARS, ROLE_CHARS = 200, 40

# One statement for a batch; an article's arrival time is copied so that trends read one table.
_SAVE = text("""
    INSERT INTO article_entities (article_id, key, name, kind, mentions, role, seen_at)
    SELECT u.article_id, u.key, u.name, u.kind, u.mentions, u.role, a.crawled_at
    FROM unnest(CAST(:article_id AS bigint[]), CAST(:key AS varchar[]), CAST(:name AS varchar[]),
                CAST(:kind AS varchar[]), CAST(:mentions AS smallint[]), CAST(:role AS varchar[]))
         AS u(article_id, key, name, kind, mentions, role)
    JOIN articles a ON a.id = u.article_id
    ON CONFLICT DO NOTHING
""")


@dataclass(frozen=True, slots=True)
class NamedEntity:
    """An entity as an article, a story or a trend shows it."""

    key: str
    name: str
    kind: str
    mentions: int  # in one article; in a story, the articles naming it
    role: str | None = None


async def save(db: Executor, found: dict[int, list[Entity]]) -> None:
    rows = [(article_id, e) for article_id, entities in found.items() for e in entities]
    if not rows:
        return
    await db.execute(_SAVE, {
        "article_id": [a for a, _ in rows], "key": [e.key[:NAME_CHARS] for _, e in rows],
        "name": [e.name[:NAME_CHARS] for _, e in rows], "kind": [e.kind for _, e in rows],
        "mentions": [min(e.count, 32767) for _, e in rows], "role": [(e.role or None) and e.role[:ROLE_CHARS]
                                                                  for _, e in rows],
    })  # fmt: skip


async def forget(db: Executor, article_ids: Sequence[int]) -> None:
    """The entities of articles about to be understood again (their text changed)."""
    if article_ids:
        await db.execute(text("DELETE FROM article_entities WHERE article_id = ANY(CAST(:ids AS bigint[]))"),
                         {"ids": list(article_ids)})  # fmt: skip


_OF_ARTICLES = text("""
    SELECT article_id, key, name, kind, mentions, role FROM article_entities
    WHERE article_id = ANY(CAST(:ids AS bigint[])) ORDER BY article_id, mentions DESC, key
""")


async def of_articles(db: Executor, ids: Sequence[int]) -> dict[int, list[NamedEntity]]:
    found: dict[int, list[NamedEntity]] = defaultdict(list)
    for row in await db.execute(_OF_ARTICLES, {"ids": list(ids)}):
        found[row.article_id].append(NamedEntity(row.key, row.name, row.kind, row.mentions, row.role))
    return found


# A story's entities: how many of its articles (copies aside) name each, the most common spelling, the first
# `limit` per story, in one statement for every story asked.
_OF_STORIES = text("""
    SELECT story_id, key, name, kind, articles, role FROM (
        SELECT a.cluster_id AS story_id, e.key, e.kind, mode() WITHIN GROUP (ORDER BY e.name) AS name,
               count(*) AS articles, mode() WITHIN GROUP (ORDER BY e.role) AS role,
               row_number() OVER (PARTITION BY a.cluster_id ORDER BY count(*) DESC, sum(e.mentions) DESC, e.key)
                   AS rank
        FROM article_entities e JOIN articles a ON a.id = e.article_id
        WHERE a.cluster_id = ANY(CAST(:ids AS bigint[])) AND a.duplicate_of_id IS NULL
        GROUP BY a.cluster_id, e.key, e.kind
    ) ranked WHERE rank <= :limit ORDER BY story_id, rank
""")


async def of_stories(db: Executor, ids: Sequence[int], *, limit: int) -> dict[int, list[NamedEntity]]:
    found: dict[int, list[NamedEntity]] = defaultdict(list)
    for row in await db.execute(_OF_STORIES, {"ids": list(ids), "limit": limit}):
        found[row.story_id].append(NamedEntity(row.key, row.name, row.kind, row.articles, row.role))
    return found


@dataclass(frozen=True, slots=True)
class Mentions:
    entity: NamedEntity
    recent: int  # articles naming it in the window
    before: int  # articles naming it in the baseline before the window


# Articles (copies aside) naming each entity in the window and in the baseline before it, for the languages and
# topics asked (an empty list filters nothing), ranked in the database: only those named faster in the window than
# the baseline's rate predicts (score > 0), highest score first, ties by more articles in the window, then by key
# (a stable order), and only `limit` of them leave PostgreSQL however many entities the window names.
_TRENDING = text("""
    SELECT key, kind, name, recent, before, recent - before::float8 / :baseline_windows AS score
    FROM (
        SELECT e.key, e.kind, mode() WITHIN GROUP (ORDER BY e.name) AS name,
               count(*) FILTER (WHERE e.seen_at >= :start) AS recent,
               count(*) FILTER (WHERE e.seen_at < :start) AS before
        FROM article_entities e JOIN articles a ON a.id = e.article_id
        WHERE e.seen_at >= :since AND e.seen_at <= :now AND a.duplicate_of_id IS NULL
          AND (cardinality(CAST(:languages AS varchar[])) = 0 OR a.language = ANY(CAST(:languages AS varchar[])))
          AND (cardinality(CAST(:topics AS varchar[])) = 0 OR a.topics && CAST(:topics AS varchar[]))
        GROUP BY e.key, e.kind
        HAVING count(*) FILTER (WHERE e.seen_at >= :start) > 0
    ) counted
    WHERE recent - before::float8 / :baseline_windows > 0
    ORDER BY score DESC, recent DESC, key
    LIMIT :limit
""")


async def trending(
    db: Executor,
    *,
    now: datetime,
    start: datetime,
    since: datetime,
    baseline_windows: int,
    languages: Sequence[str],
    topics: Sequence[str],
    limit: int,
) -> list[tuple[Mentions, float]]:
    """The `limit` entities named fastest in [start, now] against [since, start), each with its score."""
    params = {"now": now, "start": start, "since": since, "baseline_windows": baseline_windows,
              "languages": list(languages), "topics": list(topics), "limit": limit}  # fmt: skip
    rows = await db.execute(_TRENDING, params)
    return [(Mentions(NamedEntity(r.key, r.name, r.kind, r.recent), r.recent, r.before), r.score) for r in rows]


_UNSEEN = text("""
    SELECT a.id, a.title, a.summary, a.language FROM articles a
    WHERE a.simhash IS NOT NULL AND a.id > :after
      AND NOT EXISTS (SELECT 1 FROM article_entities e WHERE e.article_id = a.id)
    ORDER BY a.id LIMIT :limit
""")


async def without_entities(db: Executor, *, after: int, limit: int) -> list[tuple[int, str, str, str | None]]:
    """Understood articles with no entity row (stored before entities were extracted, or naming none), by id."""
    rows = await db.execute(_UNSEEN, {"after": after, "limit": limit})
    return [(r.id, r.title, r.summary, r.language) for r in rows]
