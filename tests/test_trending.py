"""Trending: arrivals and engagement in sliding windows (Redis sorted sets), and `trending` through the API."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from redis.asyncio import Redis

from app.api.context import Context
from app.api.queue import JobQueue
from app.api.schema import build_schema
from app.api.trending import cache_key
from app.caching import SingleFlightCache
from app.runtime.processes import free_port
from app.services import Services
from app.settings import Settings
from app.stories.service import merge_stories
from app.stories.store import ClusteringCache
from app.trending.store import (
    Trend,
    TrendingUnavailable,
    fold_merged,
    ranking,
    record_arrivals,
    record_engagement,
    record_reader_engagement,
    scores,
)
from app.trending.windows import TrendingWindow, bucket_seconds, window_buckets
from app.users.models import EngagementAction
from jobs.stories import understand_articles_job
from tests.conftest import GraphQLClient, document
from tests.newsroom import global_id, sign_up, two_stories_of_one_event
from tests.test_stories_ingest import APPLE, FED, stored

NOW = datetime(2026, 11, 20, 12, 0, 30, tzinfo=UTC)
HOUR, SIX_HOURS = TrendingWindow.HOUR.span, TrendingWindow.SIX_HOURS.span


def arrivals(story_id: int, count: int) -> dict[int, int]:
    """`count` articles (ids made up) just placed in one story."""
    return {story_id * 1000 + k: story_id for k in range(count)}


def test_each_window_reads_at_most_sixty_buckets_weighted_by_age() -> None:
    assert [bucket_seconds(w.span) for w in TrendingWindow] == [60, 60, 600, 3600]
    size, buckets = window_buckets(HOUR, NOW)
    assert (size, len(buckets)) == (60, 60)
    assert buckets[0] == (int(NOW.timestamp()) // 60, 1.0)
    assert buckets[-1][1] == pytest.approx(1 / 60)
    with pytest.raises(ValueError):
        window_buckets(timedelta(hours=25), NOW)


async def test_arrivals_in_the_window_rank_stories_and_older_ones_fall_out(services: Services) -> None:
    await record_arrivals(services.redis, arrivals(1, 3), NOW - timedelta(hours=2))
    await record_arrivals(services.redis, arrivals(3, 2), NOW - timedelta(minutes=20))
    await record_arrivals(services.redis, arrivals(2, 1), NOW)
    assert await scores(services.redis, HOUR, NOW) == [(3, pytest.approx(2 * 40 / 60)), (2, 1.0)]
    assert [s for s, _ in await scores(services.redis, SIX_HOURS, NOW)] == [1, 3, 2]  # 3 * 24/36, 2 * 34/36, 1
    assert await scores(services.redis, TrendingWindow.FIFTEEN_MINUTES.span, NOW) == [(2, 1.0)]
    later = await ranking(services.redis, HOUR, NOW + timedelta(minutes=30))  # the window slid on: all fade
    assert [(t.story_id, t.arrivals) for t in later] == [(2, 1), (3, 2)]
    assert later[0].score == pytest.approx(30 / 60)
    assert await scores(services.redis, HOUR, NOW, limit=1) == [(3, pytest.approx(2 * 40 / 60))]


async def test_engagement_counts_half_as_much_as_arrivals(services: Services) -> None:
    await record_arrivals(services.redis, arrivals(1, 2), NOW)
    for weight in (1.0, 2.0, 2.0):  # a click, a share and a save
        await record_engagement(services.redis, 2, weight, NOW)
    assert await ranking(services.redis, HOUR, NOW) == [Trend(2, 2.5, 0, 5.0), Trend(1, 2.0, 2, 0.0)]


async def test_a_reader_counts_once_per_story_and_action(services: Services) -> None:
    def engage(reader: int, action: EngagementAction) -> Any:
        return record_reader_engagement(services.redis, reader, 7, action, NOW)

    assert await engage(1, EngagementAction.CLICK) is True
    assert await engage(1, EngagementAction.CLICK) is False  # another session, or another article of the story
    assert await engage(1, EngagementAction.SHARE) is True
    assert await engage(2, EngagementAction.CLICK) is True
    assert await engage(2, EngagementAction.DISMISS) is False  # no vote against a story for everyone
    assert await ranking(services.redis, HOUR, NOW) == [Trend(7, 2.0, 0, 4.0)]


def test_merged_stories_count_towards_the_story_they_joined() -> None:
    trends = [Trend(1, 3.0, 3, 0.0), Trend(2, 2.0, 1, 2.0), Trend(3, 1.5, 1, 1.0), Trend(4, 1.0, 1, 0.0)]
    survivors = {1: 1, 2: 2, 3: 1}  # 3 was merged into 1; 4 is gone
    assert fold_merged(trends, survivors) == [Trend(1, 4.5, 4, 1.0), Trend(2, 2.0, 1, 2.0)]


async def test_without_redis_recording_goes_on_and_reading_says_so(services: Services) -> None:
    unreachable = Redis(port=free_port())
    await record_arrivals(unreachable, arrivals(1, 2), NOW)
    await record_engagement(unreachable, 1, 1.0, NOW)
    assert await record_reader_engagement(unreachable, 1, 1, EngagementAction.READ, NOW) is False
    assert await scores(unreachable, HOUR, NOW) == []
    with pytest.raises(TrendingUnavailable):
        await ranking(unreachable, HOUR, NOW)
    await unreachable.aclose()


async def expire_caches(services: Services) -> None:
    """As if 30 s had passed: the trending rankings and the cached whole responses are gone."""
    await services.cache.delete(cache_key(TrendingWindow.HOUR))
    async for key in services.redis.scan_iter("newsagg:cache:response:*"):
        await services.redis.delete(key)


async def titles_and_counts(gql: GraphQLClient, **variables: Any) -> list[tuple[str, int, float]]:
    rows = (await gql.run("Trending", **variables))["trending"]
    return [(row["story"]["title"], row["arrivals"], row["engagement"]) for row in rows]


async def test_trending_through_the_api(gql: GraphQLClient, services: Services, settings: Settings) -> None:
    # given two stories clustered by the worker's job (which counts their arrivals)
    ids = await stored(services, settings, [APPLE[0], APPLE[1], APPLE[2], FED[0]])
    assert await understand_articles_job({"services": services, "clustering": ClusteringCache()}, ids) == 4
    # when anyone asks, then the story with more arrivals leads
    assert await titles_and_counts(gql) == [(APPLE[2], 3, 0.0), (FED[0], 1, 0.0)]
    trending = (await gql.run("Trending", first=1))["trending"]
    assert trending[0]["story"]["sourceCount"] == 3
    assert trending[0]["score"] == pytest.approx(3.0, rel=0.05)  # all this minute (or the one before)
    # when two readers share and read the other story's article (one of them twice, in another session)
    for email in ("a@example.com", "b@example.com"):
        reader = gql.as_(await sign_up(gql, email))
        for action, session in (("SHARE", "s1"), ("READ", "s1"), ("READ", "s2"), ("DISMISS", "s1")):
            variables = {"articleId": global_id("Article", ids[3]), "action": action, "sessionId": session}
            assert (await reader.run("EngagementRecord", **variables))["engagementRecord"]["errors"] == []
    # then the ranking cached for 30 s still answers (whatever `first`: one ranking per window), until it expires
    assert await titles_and_counts(gql, first=5) == [(APPLE[2], 3, 0.0), (FED[0], 1, 0.0)]
    await expire_caches(services)
    assert await titles_and_counts(gql) == [(FED[0], 1, 6.0), (APPLE[2], 3, 0.0)]
    assert await titles_and_counts(gql, window="FIFTEEN_MINUTES", first=1) == [(FED[0], 1, 6.0)]
    too_many = await gql.post(document("Trending"), {"first": settings.page_size_max + 1})
    assert too_many["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


async def test_a_merged_story_collects_what_its_old_id_did(gql: GraphQLClient, services: Services,
                                                           settings: Settings) -> None:  # fmt: skip
    titles = ["Plosser taper weather Fed", "Fed Plosser taper weather data"]
    ids = await stored(services, settings, titles)
    first, second = await two_stories_of_one_event(services, ids, titles)
    await record_arrivals(services.redis, {ids[0]: first, ids[1]: second}, datetime.now(UTC))
    assert await merge_stories(services.engine, datetime.now(UTC)) == 1
    [only] = (await gql.run("Trending"))["trending"]
    assert (only["arrivals"], only["story"]["articleCount"]) == (2, 2)


async def test_without_redis_trending_is_a_typed_error(services: Services, settings: Settings) -> None:
    unreachable = Redis(port=free_port())
    broken = dataclasses.replace(services, redis=unreachable, cache=SingleFlightCache(unreachable))
    result = await build_schema(settings).execute(document("Trending"),
                                                  context_value=Context.create(broken, JobQueue(settings)))  # fmt: skip
    assert result.errors
    assert result.errors[0].extensions == {"code": "TRENDING_UNAVAILABLE"}
    await unreachable.aclose()
