"""Stories at ingest, on PostgreSQL: one story for one event across outlets, under concurrency, and merges."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from prometheus_client import REGISTRY
from sqlalchemy import func, select, update

from app.articles.models import Article
from app.articles.repository import NewArticle, insert_new
from app.articles.understanding import understand_articles
from app.outbox.models import OutboxEvent
from app.services import Services
from app.settings import Settings
from app.sources.service import SourceRequest, create_source
from app.stories import store
from app.stories.models import StoryCluster
from app.stories.service import cluster_articles, merge_stories
from app.stories.store import ClusteringCache
from app.stories.velocity import BREAKING_TOPIC
from tests.newsroom import global_id, merge_story, two_stories_of_one_event

FED = ["Fed's Plosser says weak data caused by weather, taper on track",
       "Plosser: Fed taper should continue despite weather-hit data",
       "Fed's Plosser: weather hit the data, taper on track"]  # fmt: skip
APPLE = ["Apple unveils iPhone 6 with larger screen", "Apple iPhone 6 launch: larger screen, better camera",
         "Larger screen for Apple's new iPhone 6"]  # fmt: skip
IPHONE_17 = ["Apple unveils iPhone 17 at Cupertino event",
             "Apple unveils iPhone 17 with thinner design at Cupertino event"]  # fmt: skip


async def stored(services: Services, settings: Settings, titles: list[str], start: int = 0) -> list[int]:
    """One article per title, each from its own outlet (authority rising with the index)."""
    ids = []
    now = datetime.now(UTC)
    async with services.db.begin() as session:
        for k, title in enumerate(titles, start=start):
            source = await create_source(session, settings, SourceRequest(
                feed_url=f"http://127.0.0.1:9/outlet{k}", name=f"Outlet {k}", authority=min(0.1 * k, 1.0)),
                existing_ok=True)  # fmt: skip
            new = NewArticle(source.id, f"e{k}", f"https://o{k}.example/{k}", title, "", None,
                             now + timedelta(seconds=k), k)  # fmt: skip
            ids += [a.id for a in await insert_new(session, [new])]
    return ids


def understood(topic: str) -> float:
    return REGISTRY.get_sample_value("newsagg_articles_understood_total", {"topic": topic}) or 0.0


async def stories(services: Services) -> list[StoryCluster]:
    async with services.db() as session:
        return list(await session.scalars(select(StoryCluster).where(StoryCluster.merged_into_id.is_(None))))


async def test_one_event_from_many_outlets_is_one_story(services: Services, settings: Settings) -> None:
    ids = await stored(services, settings, [FED[0], APPLE[0], FED[1], APPLE[1], APPLE[2]])
    assignment = await cluster_articles(services.engine, ids)
    assert assignment[ids[0]] == assignment[ids[2]]
    assert len({assignment[i] for i in ids[1::2] + ids[4:]}) == 1
    apple = next(s for s in await stories(services) if s.id == assignment[ids[1]])
    assert (apple.article_count, apple.source_count) == (3, 3)
    assert apple.representative_article_id == ids[4]  # the most authoritative outlet
    assert apple.title == APPLE[2]
    async with services.db() as session:
        in_stories = await session.scalar(select(func.count()).where(Article.cluster_id.is_not(None)))
    assert in_stories == 5
    assert await cluster_articles(services.engine, ids) == {}  # already placed: nothing to do


async def test_a_batch_takes_waiting_understood_articles_along(services: Services, settings: Settings) -> None:
    """Under load one job clusters what several enqueued: the articles it was given and up to `pending` more that are
    understood and still in no story (not yet understood ones wait)."""
    waiting = await stored(services, settings, [APPLE[0], APPLE[1]])
    not_understood = await stored(services, settings, [APPLE[2]], start=5)
    given = await stored(services, settings, [FED[0]], start=10)
    await understand_articles(services.engine, waiting, now=datetime.now(UTC))
    placed = await cluster_articles(services.engine, given, pending=10)
    assert set(placed) == {*waiting, *given}
    assert placed[waiting[0]] == placed[waiting[1]] != placed[given[0]]
    assert await cluster_articles(services.engine, given + waiting, pending=10) == {}  # in stories now
    assert set(await cluster_articles(services.engine, not_understood)) == set(not_understood)


async def test_concurrent_workers_end_with_one_story(services: Services, settings: Settings) -> None:
    """Two workers ingest the same story at the same moment; the clustering lock serializes them."""
    first = await stored(services, settings, [FED[0], FED[1]])
    second = await stored(services, settings, [FED[2], FED[0] + " (update)"], start=10)
    results = await asyncio.gather(cluster_articles(services.engine, first), cluster_articles(services.engine, second))
    assert len({story for result in results for story in result.values()}) == 1
    assert len(await stories(services)) == 1


async def test_stories_that_prove_one_are_merged_and_old_ids_resolve(services: Services, settings: Settings) -> None:
    titles = ["Plosser taper weather Fed", "Fed Plosser taper weather data"]
    a, b = await two_stories_of_one_event(services, await stored(services, settings, titles), titles)
    assert await merge_stories(services.engine, datetime.now(UTC)) == 1
    survivors = await stories(services)
    assert len(survivors) == 1
    assert (survivors[0].article_count, survivors[0].source_count) == (2, 2)
    async with services.engine.connect() as connection:
        assert await store.resolve(connection, a) == await store.resolve(connection, b) == survivors[0].id


async def test_a_new_feeds_backlog_does_not_take_over_a_current_story(services: Services, settings: Settings) -> None:
    """Given this week's iPhone launch as a story, when a newly added feed's backlog brings the launch of two years
    ago, then that article starts a story of its own: the current one keeps its headline and its first article."""
    launch = await stored(services, settings, IPHONE_17)
    [story] = set((await cluster_articles(services.engine, launch)).values())
    async with services.db.begin() as session:
        source = await create_source(session, settings, SourceRequest(
            feed_url="http://127.0.0.1:9/backlog", name="Backlog", authority=1.0))  # fmt: skip
        old = NewArticle(source.id, "old", "https://backlog.example/old", "Apple unveils iPhone 15 at Cupertino event",
                         "", None, datetime.now(UTC) - timedelta(days=730), 0)  # fmt: skip
        [backlog] = [a.id for a in await insert_new(session, [old])]
    assert (await cluster_articles(services.engine, [backlog]))[backlog] != story
    current = next(s for s in await stories(services) if s.id == story)
    assert (current.article_count, current.representative_article_id) == (2, launch[1])
    assert current.first_seen_at > datetime.now(UTC) - timedelta(hours=1)


async def test_stories_of_a_lagging_feed_are_merged_by_the_next_pass(services: Services, settings: Settings) -> None:
    """Given two stories of one event whose articles were published an hour before they were clustered (a feed
    polled late), when a merge pass runs on any worker, then it compares them: what counts is when a story last
    changed in clustering, not when its latest article was published."""
    titles = ["Plosser taper weather Fed", "Fed Plosser taper weather data"]
    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
    await two_stories_of_one_event(services, await stored(services, settings, titles), titles, an_hour_ago)
    assert await merge_stories(services.engine, datetime.now(UTC), ClusteringCache()) == 1
    [survivor] = await stories(services)
    assert (survivor.article_count, survivor.last_updated_at) == (2, an_hour_ago)


async def test_a_merge_pass_compares_what_changed_since_the_last_pass_on_any_worker(
    services: Services, settings: Settings
) -> None:
    """Given a pass that found nothing to merge, when a worker that never merged clusters a story of the same event
    later (published long before), then the next pass, on a third worker, merges the two; a pass after it finds
    nothing new."""
    titles = ["Plosser taper weather Fed", "Fed Plosser taper weather data"]
    ids = await stored(services, settings, titles)
    long_ago = datetime.now(UTC) - timedelta(hours=5)
    [first] = await two_stories_of_one_event(services, ids[:1], titles[:1], long_ago)
    assert await merge_stories(services.engine, datetime.now(UTC), ClusteringCache()) == 0
    [second] = await two_stories_of_one_event(services, ids[1:], titles[1:], long_ago + timedelta(minutes=1))
    assert await merge_stories(services.engine, datetime.now(UTC), ClusteringCache()) == 1
    async with services.engine.connect() as connection:
        assert await store.resolve(connection, first) == await store.resolve(connection, second)
    assert await merge_stories(services.engine, datetime.now(UTC), ClusteringCache()) == 0


async def test_stories_through_the_api(gql: Any, services: Services, settings: Settings) -> None:
    ids = await stored(services, settings, [APPLE[0], APPLE[1], APPLE[2], FED[0]])
    await cluster_articles(services.engine, ids)
    data = (await gql.run("Stories", first=10, coverage=2))["stories"]
    cards = {edge["node"]["title"]: edge["node"] for edge in data["edges"]}
    apple = cards[APPLE[2]]
    assert (apple["sourceCount"], apple["articleCount"], apple["coverage"]["totalCount"]) == (3, 3, 3)
    preview = [edge["node"]["source"]["name"] for edge in apple["coverage"]["edges"]]
    assert preview == ["Outlet 2", "Outlet 1"]  # the two most authoritative outlets
    assert apple["representative"]["source"]["name"] == "Outlet 2"
    article = await gql.post("{ articles(first: 10) { edges { node { title story { id sourceCount } } } } }")
    by_title = {e["node"]["title"]: e["node"]["story"] for e in article["data"]["articles"]["edges"]}
    assert by_title[APPLE[0]]["id"] == apple["id"]
    assert by_title[FED[0]]["sourceCount"] == 1
    body = await gql.post("query($id: ID!) { story(id: $id) { id } }", {"id": apple["id"]})
    assert body["data"]["story"]["id"] == apple["id"]


async def test_a_merged_story_id_leads_to_the_story_it_joined(gql: Any, services: Services, settings: Settings) -> None:
    titles = ["Plosser taper weather Fed", "Fed Plosser taper weather"]
    old, survivor = await two_stories_of_one_event(services, await stored(services, settings, titles), titles)
    await merge_story(services, old, survivor)
    body = await gql.post("query($id: ID!) { story(id: $id) { id articleCount } }", {"id": global_id("Story", old)})
    assert body["data"]["story"] == {"id": global_id("Story", survivor), "articleCount": 2}


async def test_a_story_breaks_once_when_many_outlets_publish_fast(services: Services, settings: Settings) -> None:
    """61 articles in 30 minutes (> 2 a minute) from 6 outlets: breaking, with exactly one outbox event."""
    titles = [FED[0]] * 61
    ids = []
    now = datetime.now(UTC)
    async with services.db.begin() as session:
        outlets = [await create_source(session, settings, SourceRequest(
            feed_url=f"http://127.0.0.1:9/fast{k}", name=f"Fast {k}")) for k in range(6)]  # fmt: skip
        for k, title in enumerate(titles):
            new = NewArticle(outlets[k % 6].id, f"f{k}", f"https://fast.example/{k}", title, "", None,
                             now - timedelta(seconds=k), k)  # fmt: skip
            ids += [a.id for a in await insert_new(session, [new])]
    slow = await stored(services, settings, [FED[0]] * 3, start=50)  # first, a slower start: not breaking yet
    await cluster_articles(services.engine, slow)
    assert not (await stories(services))[0].is_breaking
    await cluster_articles(services.engine, ids[:30])
    await cluster_articles(services.engine, ids[30:])
    [story] = await stories(services)
    assert story.is_breaking
    assert story.velocity > 2
    assert story.breaking_started_at is not None
    assert (story.article_count, story.source_count) == (64, 9)
    more = await stored(services, settings, [FED[0]] * 2, start=60)
    await cluster_articles(services.engine, more)
    await merge_stories(services.engine, datetime.now(UTC))  # measures breaking stories again
    async with services.db() as session:
        events = list(await session.scalars(select(OutboxEvent).where(OutboxEvent.topic == "story.breaking")))
    assert len(events) == 1
    assert events[0].payload["story_id"] == story.id
    assert events[0].payload["source_count"] >= 5


async def test_a_slow_story_from_few_outlets_never_breaks(services: Services, settings: Settings) -> None:
    ids = await stored(services, settings, [APPLE[0]] * 4)
    await cluster_articles(services.engine, ids)
    [story] = await stories(services)
    assert not story.is_breaking
    assert story.velocity == 4 / 30
    async with services.db() as session:
        assert await session.scalar(select(func.count()).select_from(OutboxEvent)
                                    .where(OutboxEvent.topic == BREAKING_TOPIC)) == 0  # fmt: skip


async def test_a_shorter_velocity_window_makes_outlets_at_once_breaking(services: Services, settings: Settings) -> None:
    """Ten outlets within a minute: 5 articles in a 30-minute window are not breaking, 10 in a one-minute window (the
    kind `up --demo` uses) are, by the same rule (more than 2 a minute from at least 5 outlets)."""
    first = await stored(services, settings, [FED[0]] * 5)
    await cluster_articles(services.engine, first, ClusteringCache())
    [story] = await stories(services)
    assert (story.source_count, story.is_breaking, story.velocity) == (5, False, 5 / 30)
    more = await stored(services, settings, [FED[0]] * 5, start=5)
    await cluster_articles(services.engine, more, ClusteringCache(velocity_window=timedelta(minutes=1)))
    [story] = await stories(services)
    assert (story.source_count, story.is_breaking, story.velocity) == (10, True, 10.0)
    async with services.db() as session:
        [event] = await session.scalars(select(OutboxEvent).where(OutboxEvent.topic == BREAKING_TOPIC))
    assert (event.payload["story_id"], event.payload["velocity"]) == (story.id, 10.0)


async def test_stories_carry_their_articles_topics_and_languages(gql: Any, services: Services,
                                                                 settings: Settings) -> None:  # fmt: skip
    ids = await stored(services, settings, [*APPLE, "Le gouvernement annonce une réforme des retraites en France"])
    before = [understood(topic) for topic in ("known", "unknown")]
    await understand_articles(services.engine, ids, now=datetime.now(UTC))
    assert [understood(topic) - was for topic, was in zip(("known", "unknown"), before, strict=True)] == [3, 1]
    await cluster_articles(services.engine, ids)
    query = """{ stories(first: 10, topics: [TECHNOLOGY]) { edges { node { title topics languages
                 articles(first: 5) { language topics } } } } }"""
    body = await gql.post(query)
    [apple] = [edge["node"] for edge in body["data"]["stories"]["edges"]]
    assert apple["topics"][0] == "TECHNOLOGY"
    assert apple["languages"] == ["en"]
    assert {a["language"] for a in apple["articles"]} == {"en"}
    french = await gql.post('{ articles(first: 5, languages: ["fr"]) { edges { node { language topics } } } }')
    assert [e["node"] for e in french["data"]["articles"]["edges"]] == [{"language": "fr", "topics": []}]
    bad = await gql.post('{ articles(first: 5, languages: ["not a code"]) { edges { node { id } } } }')
    assert bad["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


async def test_two_workers_caches_stay_in_step(services: Services, settings: Settings) -> None:
    """Each worker keeps its own copy of the active stories; before each batch it reads what the other wrote."""
    first, second = ClusteringCache(), ClusteringCache()
    ids = await stored(services, settings, [FED[0], FED[1], FED[2], APPLE[0]])
    a = await cluster_articles(services.engine, ids[:1], first)
    b = await cluster_articles(services.engine, ids[1:2], second)  # second sees the story first made
    c = await cluster_articles(services.engine, ids[2:], first)  # first sees what second added
    assert a[ids[0]] == b[ids[1]] == c[ids[2]] != c[ids[3]]
    story = first.state.stories[a[ids[0]]]
    assert (story.size, len(story.sources)) == (3, 3)
    [stored_story] = [s for s in await stories(services) if s.id == a[ids[0]]]
    assert (stored_story.article_count, stored_story.source_count) == (3, 3)


async def test_a_worker_alone_reads_nothing_back_and_still_sees_another_workers_write(
    services: Services, settings: Settings
) -> None:
    """A worker whose last save is the latest revision skips reading changes; once another worker writes, the next
    batch reads them (the story the other worker grew is the one this worker's article joins)."""
    first, second = ClusteringCache(), ClusteringCache()
    ids = await stored(services, settings, [FED[0], APPLE[0], APPLE[1], FED[1], FED[2]])
    a = await cluster_articles(services.engine, ids[:1], first)
    reads = first.reads
    b = await cluster_articles(services.engine, ids[1:2], first)  # nobody else wrote: nothing to read
    assert first.reads == reads
    c = await cluster_articles(services.engine, ids[2:4], second)  # the other worker grows both stories
    d = await cluster_articles(services.engine, ids[4:], first)
    assert first.reads == reads + 1
    assert a[ids[0]] == c[ids[3]] == d[ids[4]] != b[ids[1]] == c[ids[2]]
    assert first.state.stories[a[ids[0]]].size == 3
    assert first.state.stories[b[ids[1]]].size == 2


async def test_a_large_story_is_stored_lz4_compressed_and_read_back_whole(services: Services,
                                                                         settings: Settings) -> None:  # fmt: skip
    """A story with hundreds of terms is TOASTed on every save: compressed with LZ4 (migration 0030), and another
    worker reads the very centroid the first one holds."""
    [article_id] = await stored(services, settings, [FED[0]])
    summary = " ".join(f"taperword{n:04d}" for n in range(400))
    async with services.db.begin() as session:
        await session.execute(update(Article).where(Article.id == article_id).values(summary=summary))
    writer, reader = ClusteringCache(), ClusteringCache()
    [story_id] = (await cluster_articles(services.engine, [article_id], writer)).values()
    async with reader.locked(services.engine) as connection:
        state = await reader.catch_up(connection, since=datetime.now(UTC) - timedelta(hours=1))
    assert len(state.stories[story_id].centroid) > 400
    assert state.stories[story_id].centroid == writer.state.stories[story_id].centroid
    async with services.db() as session:
        method = await session.scalar(select(func.pg_column_compression(StoryCluster.centroid))
                                      .where(StoryCluster.id == story_id))  # fmt: skip
    assert method == "lz4"
