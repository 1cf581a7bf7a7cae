"""sourceDelete: thousands of a source's articles go a batch at a time; the stories they were in are counted, labelled
and represented again from what is left, emptied stories leave every read and every worker's clustering copy, read
events and copies follow, and the search index is told."""

from __future__ import annotations

import math
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select, text

from app.articles.models import Article
from app.outbox.models import OutboxEvent
from app.search.sync import SEARCH_TOPIC
from app.services import Services
from app.settings import Settings
from app.sources.models import CrawlSchedule, Source
from app.stories.clustering import story_topics
from app.stories.models import StoryCluster
from app.stories.store import ClusteringCache
from app.stories.updates import STORY_UPDATED_TOPIC
from app.users.models import ReadEvent, User
from tests.conftest import GraphQLClient, count_queries
from tests.newsroom import add_source, administrator, global_id

SHARED, ALONE = 500, 100  # stories the doomed source shares with others, and stories it alone covers
PER_SHARED, PER_ALONE = 4, 3  # its articles in each
COPIED = 250  # shared stories where the third outlet's article is a copy of the doomed source's
DOOMED = SHARED * PER_SHARED + ALONE * PER_ALONE

_STORIES = text("""
    INSERT INTO story_clusters (id, title, first_seen_at, last_updated_at, centroid, centroid_norm, is_breaking,
                                revision)
    SELECT k, 'Story ' || k, now() - interval '2 hours', now() - interval '10 minutes', '{"flood": 2.0}', 2.0,
           k % 7 = 0, nextval('story_revision_seq')
    FROM generate_series(1, CAST(:stories AS int)) AS k
""")
_ARTICLES = text("""
    INSERT INTO articles (source_id, external_id, url, title, summary, published_at, content_hash, language, topics,
                          cluster_id)
    SELECT :source, :tag || k || '.' || j, 'https://' || :tag || '.example/' || k || '/' || j,
           :tag || ' ' || k || '.' || j, '', now() - interval '90 minutes' + j * interval '1 minute', k * 10 + j,
           :language, CAST(:topics AS varchar[]), k
    FROM generate_series(CAST(:first AS int), CAST(:last AS int)) AS k,
         generate_series(1, CAST(:per_story AS int)) AS j
""")
_STORY_STATE = text("""
    UPDATE story_clusters AS s SET article_count = x.n, source_ids = x.sources, source_count = cardinality(x.sources),
        representative_article_id = x.lead, languages = x.languages, topics = '{world}', primary_topic = 'world',
        topic_counts = jsonb_build_object('world', x.n),
        recent_arrivals = (SELECT jsonb_agg(jsonb_build_array(extract(epoch FROM now()) - 60, CAST(src AS text)))
                           FROM unnest(x.sources) AS src)
    FROM (SELECT cluster_id, count(*) AS n, array_agg(DISTINCT source_id) AS sources, min(id) AS lead,
                 array_agg(DISTINCT language) AS languages
          FROM articles GROUP BY cluster_id) AS x
    WHERE s.id = x.cluster_id
""")


async def _newsroom(services: Services, settings: Settings) -> dict[str, int]:
    """Four outlets: `doomed` (authority 0.9, leading every story it is in), `wire` (0.5), `paper` (0.3), whose
    articles in the first COPIED stories are copies of the doomed source's first one, and `local` (0.2), whose three
    articles in each other shared story have no topic (what is left of those is a business story); and one reader who
    read every article of the first 100 stories."""
    ids = {"doomed": await add_source(services, settings, "doomed", 0.9),
           "wire": await add_source(services, settings, "wire", 0.5, language="fr"),
           "paper": await add_source(services, settings, "paper", 0.3, language="de"),
           "local": await add_source(services, settings, "local", 0.2, language="de")}  # fmt: skip
    shapes = [
        ("doomed", 1, SHARED, PER_SHARED, "en", ["world"]),
        ("doomed", SHARED + 1, SHARED + ALONE, PER_ALONE, "en", ["world"]),
        ("wire", 1, SHARED, 1, "fr", ["business"]),
        ("paper", 1, COPIED, 1, "de", ["world"]),
        ("local", COPIED + 1, SHARED, 3, "de", []),  # a language the topic classifier does not read: no topic
    ]
    async with services.engine.begin() as connection:
        await connection.execute(_STORIES, {"stories": SHARED + ALONE})
        for tag, first, last, per_story, language, topics in shapes:
            await connection.execute(_ARTICLES, {"source": ids[tag], "tag": tag, "first": first, "last": last,
                                                 "per_story": per_story, "language": language,
                                                 "topics": topics})  # fmt: skip
        await connection.execute(_STORY_STATE)
        await connection.execute(text("""
            UPDATE articles AS copy SET duplicate_of_id = original.id FROM articles AS original
            WHERE copy.source_id = :paper AND original.source_id = :doomed AND original.cluster_id = copy.cluster_id
              AND original.external_id LIKE '%.1'"""), ids)  # fmt: skip
        reader = await connection.scalar(text("INSERT INTO users (email, password_hash) VALUES ('r@example.com', 'x') "
                                              "RETURNING id"))  # fmt: skip
        await connection.execute(
            text("""
            INSERT INTO read_events (user_id, article_id, session_id, action)
            SELECT :reader, id, 's', 'read' FROM articles WHERE cluster_id <= 100"""),
            {"reader": reader},
        )
    return ids


async def test_deleting_a_source_keeps_every_story_consistent(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    ids = await _newsroom(services, settings)
    admin = await administrator(gql, services)
    worker_copy = ClusteringCache()  # a clustering worker's copy of the stories, caught up before the delete
    async with services.engine.connect() as connection:
        state = await worker_copy.catch_up(connection, since=datetime.now(UTC) - timedelta(hours=48))
    assert len(state.stories) == SHARED + ALONE
    async with services.db() as session:
        last_event = await session.scalar(select(func.max(OutboxEvent.id))) or 0

    services.settings.source_delete_batch = 300
    try:
        with count_queries(services) as statements:
            payload = (await admin.run("SourceDelete", id=global_id("Source", ids["doomed"])))["sourceDelete"]
    finally:
        services.settings.source_delete_batch = 500

    assert payload == {"deletedSourceId": global_id("Source", ids["doomed"]), "articlesDeleted": DOOMED,
                       "storiesChanged": SHARED + ALONE, "storiesEmptied": ALONE, "errors": []}  # fmt: skip
    deletes = [s for s in statements if s.lstrip().startswith("WITH doomed")]
    assert len(deletes) == math.ceil(DOOMED / 300) + 1  # a batch per transaction, and the last one finding none
    async with services.db() as session:
        assert await session.get(Source, ids["doomed"]) is None
        assert await session.get(CrawlSchedule, ids["doomed"]) is None
        assert await session.scalar(select(func.count()).where(Article.source_id == ids["doomed"])) == 0
        articles = list(await session.scalars(select(Article)))
        stories = {s.id: s for s in await session.scalars(select(StoryCluster))}
        authority = {s.id: s.authority for s in await session.scalars(select(Source))}
        reads = list(await session.scalars(select(ReadEvent.article_id)))
        events = list(await session.scalars(select(OutboxEvent).where(OutboxEvent.id > last_event,
                                                                       OutboxEvent.topic == SEARCH_TOPIC)))  # fmt: skip
        newer = (OutboxEvent.id > last_event, OutboxEvent.topic == STORY_UPDATED_TOPIC)
        updates = list(await session.scalars(select(OutboxEvent.payload).where(*newer).order_by(OutboxEvent.id)))
        assert await session.scalar(select(func.count()).select_from(User)) == 2

    _assert_stories_match_their_articles(stories, articles, authority)
    assert stories[SHARED].topics == ["business"]  # its one article with a topic, beside three without
    emptied = [s for s in stories.values() if s.article_count == 0]
    assert sorted(s.id for s in emptied) == list(range(SHARED + 1, SHARED + ALONE + 1))
    assert all(s.representative_article_id is None and s.centroid == {} and not s.is_breaking for s in emptied)
    assert all(a.duplicate_of_id is None for a in articles)  # the copies' original is gone: they stand alone
    assert sorted(reads) == sorted(a.id for a in articles if a.cluster_id and a.cluster_id <= 100)
    latest = {update["story_id"]: update for update in updates}  # what a storyUpdated subscriber saw last
    assert {i: (u["article_count"], u["source_count"]) for i, u in latest.items()} == {
        i: (s.article_count, s.source_count) for i, s in stories.items()}  # fmt: skip
    gone = {int(i) for e in events for i in e.payload["articles"] if not e.payload["inserted"]}
    assert len(gone) == DOOMED  # the search index is told of each
    assert not gone & {a.id for a in articles}

    async with services.engine.connect() as connection:
        state = await worker_copy.catch_up(connection, since=datetime.now(UTC) - timedelta(hours=48))
    assert sorted(state.stories) == list(range(1, SHARED + 1))  # emptied stories forgotten
    assert (state.stories[1].size, state.stories[1].sources) == (2, {str(ids["wire"]), str(ids["paper"])})
    await _assert_reads_leave_out_emptied_stories(gql)


def _assert_stories_match_their_articles(stories: dict[int, StoryCluster], articles: list[Article],
                                         authority: dict[int, float]) -> None:  # fmt: skip
    """Each story as app/stories/clustering.py would have it, computed here from the articles left."""
    members: dict[int, list[Article]] = {}
    for article in articles:
        members.setdefault(article.cluster_id or 0, []).append(article)
    for story_id, story in stories.items():
        mine = members.get(story_id, [])
        lead = min(mine, key=lambda a: (-authority[a.source_id], a.published_at, a.id)) if mine else None
        counts = Counter(topic for a in mine for topic in a.topics)
        assert story.article_count == len(mine), story_id
        assert sorted(story.source_ids) == sorted({a.source_id for a in mine}), story_id
        assert story.source_count == len({a.source_id for a in mine}), story_id
        assert story.representative_article_id == (lead.id if lead else None), story_id
        assert lead is None or story.title == lead.title, story_id
        assert sorted(story.languages) == sorted({a.language for a in mine if a.language}), story_id
        assert story.topic_counts == dict(counts), story_id
        expected = _labels(counts, len(mine))
        assert (story.topics, story.primary_topic) == (expected, expected[0] if expected else None), story_id
        assert {src for _, src in story.recent_arrivals} == {str(a.source_id) for a in mine}, story_id


def _labels(counts: Counter[str], size: int) -> list[str]:
    from app.stories.clustering import Representative, Story

    lead = Representative(0, "", 0.0, datetime.now(UTC))
    story = Story(0, {}, 0.0, size, set(), lead.at, lead.at, lead, topic_counts=counts)
    return story_topics(story)


async def _assert_reads_leave_out_emptied_stories(gql: GraphQLClient) -> None:
    seen: list[dict[str, Any]] = []
    after = None
    while True:
        page = (await gql.run("Stories", first=100, after=after, coverage=1))["stories"]
        seen.extend(edge["node"] for edge in page["edges"])
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert len(seen) == SHARED
    assert all(node["representative"]["source"]["name"] == "wire" for node in seen)
    emptied = global_id("Story", SHARED + 1)
    answer = await gql.post("query($id: ID!) { node(id: $id) { id } }", {"id": emptied})
    assert answer["data"]["node"] is None
    feed = (await gql.run("Feed", first=50))["feed"]
    assert feed["edges"]
    assert all(int(_row_id(edge["node"]["story"]["id"])) <= SHARED for edge in feed["edges"])


def _row_id(node_id: str) -> str:
    import base64

    return base64.b64decode(node_id).decode().split(":", 1)[1]


async def test_deleting_an_unknown_source_or_as_a_reader_is_refused(gql: GraphQLClient, services: Services,
                                                                     settings: Settings) -> None:  # fmt: skip
    source = await add_source(services, settings, "kept")
    admin = await administrator(gql, services)
    missing = (await admin.run("SourceDelete", id=global_id("Source", 99999)))["sourceDelete"]
    assert [e["code"] for e in missing["errors"]] == ["NOT_FOUND"]
    assert missing["deletedSourceId"] is None
    reader = (await gql.as_(None).run("SourceDelete", id=global_id("Source", source)))["sourceDelete"]
    assert [e["code"] for e in reader["errors"]] == ["FORBIDDEN"]
    async with services.db() as session:
        assert await session.get(Source, source) is not None
