"""Every query on places: an article's, a story's, the outlets covering a story by group, and a region's stories."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text

from app.db.engine import Executor
from app.entities.extractor import Entity
from app.places.gazetteer import places_of

NAME_CHARS = 200
# Place names read and stored per article, the most named first: an article is about a few places; a list of
# thousands pasted into a summary is not thousands of places' news (extraction keeps 30 entities of any kind already)
MAX_PLACES = 12

# One statement for a batch, with each article's arrival copied (as for entities) so a region's recent articles
# are read from one index.
_SAVE = text("""
    INSERT INTO article_places (article_id, key, name, country, region, mentions, seen_at)
    SELECT u.article_id, u.key, u.name, u.country, nullif(u.region, ''), u.mentions, a.crawled_at
    FROM unnest(CAST(:article_id AS bigint[]), CAST(:key AS varchar[]), CAST(:name AS varchar[]),
                CAST(:country AS varchar[]), CAST(:region AS varchar[]), CAST(:mentions AS smallint[]))
         AS u(article_id, key, name, country, region, mentions)
    JOIN articles a ON a.id = u.article_id
    ON CONFLICT DO NOTHING
""")


_OUTLET_COUNTRIES = text("""
    SELECT a.id, s.country FROM articles a JOIN sources s ON s.id = a.source_id
    WHERE a.id = ANY(CAST(:ids AS bigint[])) AND s.country IS NOT NULL
""")


async def save(db: Executor, found: Mapping[int, Sequence[Entity]]) -> None:
    """The places among each article's entities (those the gazetteer resolves to a country; the MAX_PLACES most
    named), each name read in the light of the article's other places and its outlet's country (`resolve`)."""
    named = {
        article_id: [e for e in entities if e.kind == "LOC"][:MAX_PLACES] for article_id, entities in found.items()
    }
    named = {article_id: places for article_id, places in named.items() if places}
    if not named:
        return
    outlets = {r.id: r.country for r in await db.execute(_OUTLET_COUNTRIES, {"ids": list(named)})}
    rows = []
    for article_id, entities in named.items():
        for entity, place in zip(entities, places_of([e.name for e in entities], outlets.get(article_id)), strict=True):
            if place is not None:
                rows.append((article_id, entity, place.country, place.region or ""))
    if not rows:
        return
    await db.execute(_SAVE, {
        "article_id": [r[0] for r in rows], "key": [r[1].key[:NAME_CHARS] for r in rows],
        "name": [r[1].name[:NAME_CHARS] for r in rows], "country": [r[2] for r in rows],
        "region": [r[3] for r in rows], "mentions": [min(r[1].count, 32767) for r in rows],
    })  # fmt: skip


@dataclass(frozen=True, slots=True)
class PlaceMention:
    """A place as an article names it, or, in a story, a country or region with the articles naming it."""

    name: str
    country: str
    region: str | None
    mentions: int  # in one article: times named; in a story: articles (copies aside)


_OF_ARTICLES = text("""
    SELECT article_id, name, country, region, mentions FROM article_places
    WHERE article_id = ANY(CAST(:ids AS bigint[])) ORDER BY article_id, mentions DESC, key
""")


async def of_articles(db: Executor, ids: Sequence[int]) -> dict[int, list[PlaceMention]]:
    found: dict[int, list[PlaceMention]] = defaultdict(list)
    for row in await db.execute(_OF_ARTICLES, {"ids": list(ids)}):
        found[row.article_id].append(PlaceMention(row.name, row.country, row.region, row.mentions))
    return found


# A story's countries and regions: articles (copies aside) naming a place in each, the most named place as its name
_OF_STORIES = text("""
    SELECT a.cluster_id AS story_id, p.country, p.region, count(DISTINCT p.article_id) AS articles,
           mode() WITHIN GROUP (ORDER BY p.name) AS name
    FROM article_places p JOIN articles a ON a.id = p.article_id
    WHERE a.cluster_id = ANY(CAST(:ids AS bigint[])) AND a.duplicate_of_id IS NULL
    GROUP BY GROUPING SETS ((a.cluster_id, p.country), (a.cluster_id, p.country, p.region))
    HAVING grouping(p.region) = 1 OR p.region IS NOT NULL
    ORDER BY story_id, articles DESC, p.country, p.region NULLS FIRST
""")


async def of_stories(db: Executor, ids: Sequence[int]) -> dict[int, list[PlaceMention]]:
    """Per story: a row per country (region None) and a row per known region, most articles first."""
    found: dict[int, list[PlaceMention]] = defaultdict(list)
    for row in await db.execute(_OF_STORIES, {"ids": list(ids)}):
        found[row.story_id].append(PlaceMention(row.name, row.country, row.region, row.articles))
    return found


@dataclass(frozen=True, slots=True)
class OutletGroupRow:
    story_id: int
    country: str | None
    kind: str
    source_ids: list[int]
    articles: int


# The outlets of each story by country and kind, copies counted with their outlet (a wire story reprinted is the
# reprinting outlet's coverage too)
_PERSPECTIVES = text("""
    SELECT a.cluster_id AS story_id, s.country, s.outlet_kind AS kind, array_agg(DISTINCT s.id) AS source_ids,
           count(*) AS articles
    FROM articles a JOIN sources s ON s.id = a.source_id
    WHERE a.cluster_id = ANY(CAST(:ids AS bigint[]))
    GROUP BY a.cluster_id, s.country, s.outlet_kind
""")


async def outlet_groups(db: Executor, ids: Sequence[int]) -> list[OutletGroupRow]:
    rows = await db.execute(_PERSPECTIVES, {"ids": list(ids)})
    return [OutletGroupRow(r.story_id, r.country, r.kind, sorted(r.source_ids), r.articles) for r in rows]


def countries_of_story(story: str) -> str:
    """SQL for the countries a story (the SQL expression `story`) is local to: where a place its articles name is, or
    where an outlet covering it is. The one notion of locality: region feeds and region alerts both read it."""
    return f"""
        SELECT p.country FROM articles a JOIN article_places p ON p.article_id = a.id WHERE a.cluster_id = {story}
        UNION
        SELECT o.country FROM articles a JOIN sources o ON o.id = a.source_id
        WHERE a.cluster_id = {story} AND o.country IS NOT NULL"""


# Of the stories asked, those local to a country (about it or from it)
_LOCAL = text(f"""
    SELECT s.id FROM story_clusters s
    WHERE s.id = ANY(CAST(:ids AS bigint[])) AND :country IN ({countries_of_story("s.id")})
""")


async def local_stories(db: Executor, country: str, ids: Sequence[int]) -> set[int]:
    if not ids:
        return set()
    return set(await db.scalars(_LOCAL, {"ids": list(ids), "country": country}))


async def sources_in(db: Executor, country: str) -> list[int]:
    return list(await db.scalars(text("SELECT id FROM sources WHERE country = :country"), {"country": country}))


# For the feed's candidates: the stories naming a place in the country in articles since `since`, and how many of
# their articles do
_ABOUT = text("""
    SELECT a.cluster_id, count(DISTINCT p.article_id) AS articles
    FROM article_places p JOIN articles a ON a.id = p.article_id
    WHERE p.country = :country AND p.seen_at >= :since AND a.cluster_id IS NOT NULL
    GROUP BY a.cluster_id
""")


async def stories_about(db: Executor, country: str, since: datetime) -> dict[int, int]:
    return {r.cluster_id: r.articles for r in await db.execute(_ABOUT, {"country": country, "since": since})}
