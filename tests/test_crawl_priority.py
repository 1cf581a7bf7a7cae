"""Crawl priority: breaking and trending stories and hubs' announcements bring their sources' crawls forward, and
the priority decays; due sources are claimed highest priority first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select, update

from app.articles.repository import NewArticle, insert_new
from app.ingest.priority import decayed, raise_sources
from app.ingest.scheduler import claim_due_sources
from app.services import Services
from app.settings import Settings
from app.sources.models import CrawlSchedule
from app.sources.repository import effective_priority
from app.stories.service import cluster_articles
from app.trending.store import record_arrivals
from jobs.crawl import crawl_priority_job
from tests.newsroom import StorySpec, add_source, add_story
from tests.test_stories_ingest import FED


async def outlets(services: Services, settings: Settings, n: int, *, due_in: timedelta) -> list[int]:
    """`n` sources fetched 10 minutes ago, next due in `due_in` (negative: overdue)."""
    ids = [await add_source(services, settings, f"outlet{i}") for i in range(n)]
    now = datetime.now(UTC)
    async with services.db.begin() as session:
        await session.execute(update(CrawlSchedule).values(last_fetched_at=now - timedelta(minutes=10),
                                                           next_crawl_at=now + due_in))  # fmt: skip
    return ids


async def schedules(services: Services) -> dict[int, CrawlSchedule]:
    async with services.db() as session:
        return {s.source_id: s for s in await session.scalars(select(CrawlSchedule))}


async def claims_one_by_one(services: Services, settings: Settings, n: int) -> list[int]:
    one_at_a_time = settings.model_copy(update={"crawl_batch_size": 1})
    order = []
    for _ in range(n):
        async with services.db.begin() as session:
            order += await claim_due_sources(session, one_at_a_time)
    return order


async def test_due_sources_are_claimed_highest_priority_first(services: Services, settings: Settings) -> None:
    quiet, pushed, breaking = await outlets(services, settings, 3, due_in=timedelta(minutes=-5))
    now = datetime.now(UTC)
    async with services.engine.begin() as connection:
        await raise_sources(connection, settings, [pushed], reason="websub", now=now)
        await raise_sources(connection, settings, [breaking], reason="breaking", now=now)
    assert await claims_one_by_one(services, settings, 3) == [breaking, pushed, quiet]


async def test_priority_halves_every_half_life(services: Services, settings: Settings) -> None:
    earlier, later = await outlets(services, settings, 2, due_in=timedelta(minutes=-5))
    now = datetime.now(UTC)
    half_life = timedelta(minutes=settings.crawl_priority_half_life_minutes)
    async with services.engine.begin() as connection:  # breaking two half-lives ago (100 -> 25) beats websub now (40)?
        await raise_sources(connection, settings, [earlier], reason="breaking", now=now - 2 * half_life)
        await raise_sources(connection, settings, [later], reason="websub", now=now)
        await connection.execute(update(CrawlSchedule).values(next_crawl_at=now - timedelta(minutes=1)))  # one time
        in_sql = await connection.scalar(select(effective_priority(now, half_life.total_seconds()))
                                         .where(CrawlSchedule.source_id == earlier))  # fmt: skip
    assert in_sql is not None
    assert abs(in_sql - decayed(100, now - 2 * half_life, now, half_life.total_seconds())) < 1e-6
    assert round(in_sql) == 25
    assert await claims_one_by_one(services, settings, 2) == [later, earlier]


async def test_breaking_and_trending_stories_bring_their_sources_crawls_forward(
    services: Services, settings: Settings
) -> None:
    breaking_a, breaking_b, trending, quiet, failing = await outlets(services, settings, 5, due_in=timedelta(hours=1))
    async with services.db.begin() as session:
        await session.execute(update(CrawlSchedule).where(CrawlSchedule.source_id == failing)
                              .values(consecutive_failures=2))  # fmt: skip
    await add_story(services, StorySpec("Quake hits the coast", [breaking_a, breaking_b, failing], breaking=True))
    story, _ = await add_story(services, StorySpec("Budget vote tonight", [trending]))
    await add_story(services, StorySpec("Village fete", [quiet]))
    await record_arrivals(services.redis, dict.fromkeys(range(5), story), datetime.now(UTC))  # five outlets now
    before = await schedules(services)

    raised = await crawl_priority_job({"services": services})

    after = await schedules(services)
    assert raised == {"breaking": 3, "trending": 1}
    assert {i: after[i].priority for i in after} == {breaking_a: 100, breaking_b: 100, trending: 60, quiet: 0,
                                                     failing: 100}  # fmt: skip
    assert after[quiet].next_crawl_at == before[quiet].next_crawl_at
    assert after[failing].next_crawl_at == before[failing].next_crawl_at  # its back-off stands
    async with services.db.begin() as session:
        claimed = await claim_due_sources(session, settings)
    assert claimed == sorted([breaking_a, breaking_b, trending])  # due now: last fetched longer ago than 1 min


async def test_priority_is_a_head_start_so_a_long_overdue_source_is_not_starved(
    services: Services, settings: Settings
) -> None:
    long_overdue, slightly_overdue, raised = await outlets(services, settings, 3, due_in=timedelta(minutes=-1))
    now = datetime.now(UTC)
    head_start = timedelta(seconds=settings.crawl_priority_head_start_seconds)
    async with services.db.begin() as session:
        await session.execute(update(CrawlSchedule).where(CrawlSchedule.source_id == long_overdue)
                              .values(next_crawl_at=now - head_start - timedelta(minutes=5)))  # fmt: skip
        await raise_sources(session, settings, [raised], reason="breaking", now=now)
    assert await claims_one_by_one(services, settings, 3) == [long_overdue, raised, slightly_overdue]


async def test_a_story_the_clusterer_finds_breaking_raises_the_outlets_covering_it(
    services: Services, settings: Settings
) -> None:
    """Given 61 articles on one event in 30 minutes from 6 outlets, clustered as ingest clusters them (so the story
    turns breaking by its velocity), and one quiet outlet, when the priority job runs, then the 6 are raised."""
    *fast, quiet = await outlets(services, settings, 7, due_in=timedelta(hours=1))
    now = datetime.now(UTC)
    news = [NewArticle(fast[k % 6], f"f{k}", f"https://fast.example/{k}", FED[0], "", None,
                       now - timedelta(seconds=k), k) for k in range(61)]  # fmt: skip
    async with services.db.begin() as session:
        ids = [article.id for article in await insert_new(session, news)]
    await cluster_articles(services.engine, ids)

    raised = await crawl_priority_job({"services": services})

    after = await schedules(services)
    assert raised["breaking"] == 6
    assert [after[i].priority for i in fast] == [settings.crawl_priority_breaking] * 6
    assert after[quiet].priority == 0
    assert all(after[i].next_crawl_at <= datetime.now(UTC) for i in fast)  # fetched 10 min ago: due at once


async def test_on_a_quiet_day_the_top_trending_stories_raise_nothing(services: Services, settings: Settings) -> None:
    """Given the only stories of the hour each one article old (scores of about 1, under the minimum of 3), when the
    priority job runs, no source is raised; once one story gathers arrivals past the minimum, its sources are."""
    lone_a, lone_b, busy = await outlets(services, settings, 3, due_in=timedelta(hours=1))
    stories = {source: await add_story(services, StorySpec(f"Story of {source}", [source])) for source in (lone_a,
               lone_b, busy)}  # fmt: skip
    now = datetime.now(UTC)
    await record_arrivals(services.redis, {articles[0]: story for story, articles in stories.values()}, now)

    assert await crawl_priority_job({"services": services}) == {"breaking": 0, "trending": 0}
    assert {s.priority for s in (await schedules(services)).values()} == {0}

    busy_story = stories[busy][0]
    await record_arrivals(services.redis, dict.fromkeys(range(3), busy_story), now)  # 4 arrivals now: a score of 4
    assert await crawl_priority_job({"services": services}) == {"breaking": 0, "trending": 1}
    after = await schedules(services)
    assert (after[lone_a].priority, after[lone_b].priority, after[busy].priority) == (0, 0, 60)


WEBSUB_FLOOD = 2000


async def test_a_websub_push_flood_raises_its_source_once_per_window_and_starves_nobody(
    services: Services, settings: Settings
) -> None:
    """Given a publisher whose hub pushes 2,000 times in a few minutes, and 50 other sources whose hubs push once
    each, when every push raises its source as ingest_push_job does, then the flooding source was raised once in
    the window (its priority decays as anyone's), every other source once, and when the next window opens after
    the flood a push raises it again."""
    flooder, *others = await outlets(services, settings, 51, due_in=timedelta(minutes=-5))
    start = datetime.now(UTC)
    window = timedelta(minutes=settings.crawl_priority_websub_window_minutes)
    raised = 0
    async with services.engine.begin() as connection:
        for k in range(WEBSUB_FLOOD):
            at = start + k * (window / (2 * WEBSUB_FLOOD))  # the flood lasts half a window
            raised += await raise_sources(connection, settings, [flooder], reason="websub", now=at)
            if 0 < k <= len(others):
                raised += await raise_sources(connection, settings, [others[k - 1]], reason="websub", now=at)
    assert raised == 1 + len(others)
    now = start + window / 2
    after = await schedules(services)
    half_life_s = settings.crawl_priority_half_life_minutes * 60
    flooder_now = decayed(after[flooder].priority, after[flooder].priority_at, now, half_life_s)
    others_now = [decayed(after[i].priority, after[i].priority_at, now, half_life_s) for i in others]
    assert after[flooder].priority_at == start  # raised by the first push only
    assert flooder_now < min(others_now)  # pushed first and most: decayed the longest, so it is claimed last
    async with services.engine.begin() as connection:
        assert await raise_sources(connection, settings, [flooder], reason="websub", now=start + window) == 1


async def test_a_zero_websub_window_lets_every_push_raise(services: Services, settings: Settings) -> None:
    (pushed,) = await outlets(services, settings, 1, due_in=timedelta(minutes=-5))
    every_push = settings.model_copy(update={"crawl_priority_websub_window_minutes": 0})
    now = datetime.now(UTC)
    async with services.engine.begin() as connection:
        assert [await raise_sources(connection, every_push, [pushed], reason="websub", now=now + timedelta(seconds=k))
                for k in range(3)] == [1, 1, 1]  # fmt: skip
