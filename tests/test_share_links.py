"""Share links: shareLinkCreate, GET /s/<code> over real HTTP, clicks counted in Redis and flushed to PostgreSQL."""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import delete, select, update

from app.articles.models import Article
from app.services import Services
from app.settings import Settings
from app.sharing import codes
from app.sharing.counters import FLUSHING, FLUSHING_ID, PENDING
from app.sharing.flush import flush_clicks
from app.sharing.models import ShareClickBatch, ShareLink
from app.sharing.repository import destination
from app.stories.models import StoryCluster
from app.trending.store import ranking
from app.trending.windows import TrendingWindow
from jobs.sharing import flush_share_clicks_job
from tests.conftest import GraphQLClient
from tests.newsroom import StorySpec, add_source, add_story, global_id, sign_up

BROWSER = "Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0"


@pytest.fixture
async def web(api_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=api_url, follow_redirects=False, headers={"user-agent": BROWSER}) as http:
        yield http


async def a_story(services: Services, settings: Settings, outlets: int = 2) -> tuple[int, list[int]]:
    sources = [await add_source(services, settings, f"outlet{k}") for k in range(outlets)]
    return await add_story(services, StorySpec("Harbour bridge reopens after repairs", sources))


async def share(gql: GraphQLClient, **target: str) -> dict[str, Any]:
    data = await gql.run("ShareLinkCreate", input=target)
    result: dict[str, Any] = data["shareLinkCreate"]
    return result


async def article_url(services: Services, article_id: int) -> str:
    async with services.db() as session:
        url = await session.scalar(select(Article.url).where(Article.id == article_id))
    assert url
    return url


async def counters(services: Services, article_id: int) -> tuple[int, int]:
    async with services.db() as session:
        row = (await session.execute(select(Article.click_count, Article.share_count)
                                     .where(Article.id == article_id))).one()  # fmt: skip
    return row.click_count, row.share_count


async def test_a_reader_shares_an_article_once_and_follows_it_to_the_article(
    gql: GraphQLClient, services: Services, settings: Settings, web: httpx.AsyncClient, api_url: str
) -> None:
    _, articles = await a_story(services, settings)
    reader = gql.as_(await sign_up(gql))
    first = await share(reader, articleId=global_id("Article", articles[0]))
    again = await share(reader, articleId=global_id("Article", articles[0]))
    link = first["shareLink"]
    assert first["created"]
    assert not again["created"]
    assert again["shareLink"]["code"] == link["code"]
    assert codes.well_formed(link["code"])
    assert link["url"] == f"{api_url}/s/{link['code']}"
    assert link["target"]["__typename"] == "Article"
    assert link["target"]["url"] == await article_url(services, articles[0])
    assert await counters(services, articles[0]) == (0, 1)  # one share, however often it was asked for

    response = await web.get(f"/s/{link['code']}")
    assert response.status_code == 302
    assert response.headers["location"] == await article_url(services, articles[0])
    assert response.headers["referrer-policy"] == "no-referrer"
    assert response.headers["cache-control"] == "private, max-age=90"


async def test_sharing_needs_a_reader_one_target_and_an_existing_one(gql: GraphQLClient, services: Services,
                                                                      settings: Settings) -> None:  # fmt: skip
    story_id, articles = await a_story(services, settings)
    anonymous = await gql.post("mutation($i: ShareLinkCreateInput!) { shareLinkCreate(input: $i) { created } }",
                               {"i": {"articleId": global_id("Article", articles[0])}})  # fmt: skip
    assert anonymous["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    reader = gql.as_(await sign_up(gql))
    for target in ({}, {"articleId": global_id("Article", articles[0]), "storyId": global_id("Story", story_id)},
                   {"articleId": global_id("Story", story_id)}):  # fmt: skip
        body = await reader.post(
            "mutation($i: ShareLinkCreateInput!) { shareLinkCreate(input: $i) { created } }", {"i": target}
        )
        assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT", target
    missing = await share(reader, articleId=global_id("Article", 999_999))
    assert missing["shareLink"] is None
    assert missing["errors"][0]["code"] == "NOT_FOUND"
    async with services.db.begin() as session:
        await session.execute(update(Article).where(Article.id == articles[1]).values(url=None))
    no_page = await share(reader, articleId=global_id("Article", articles[1]))
    assert no_page["errors"][0]["code"] == "NOT_SHAREABLE"


async def test_new_links_are_rate_limited_per_reader_but_sharing_again_is_not(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    _story_id, articles = await a_story(services, settings, outlets=3)
    reader = gql.as_(await sign_up(gql))
    limit = settings.share_links_per_hour
    settings.share_links_per_hour = 2
    try:
        for article in articles[:2]:
            assert (await share(reader, articleId=global_id("Article", article)))["created"]
        refused = await reader.http.post("/graphql", headers={"authorization": f"Bearer {reader.token}"}, json={
            "query": "mutation($i: ShareLinkCreateInput!) { shareLinkCreate(input: $i) { created } }",
            "variables": {"i": {"articleId": global_id("Article", articles[2])}},
        })  # fmt: skip
        assert refused.status_code == 429
        assert int(refused.headers["retry-after"]) > 0
        assert refused.json()["errors"][0]["extensions"]["code"] == "RATE_LIMITED"
        assert not (await share(reader, articleId=global_id("Article", articles[0])))["created"]  # the same link
    finally:
        settings.share_links_per_hour = limit


async def test_a_story_link_leads_to_its_representative_article_and_counts_a_share(
    gql: GraphQLClient, services: Services, settings: Settings, web: httpx.AsyncClient
) -> None:
    story_id, articles = await a_story(services, settings)
    reader = gql.as_(await sign_up(gql))
    created = await share(reader, storyId=global_id("Story", story_id))
    assert created["shareLink"]["target"]["__typename"] == "Story"
    response = await web.get(f"/s/{created['shareLink']['code']}")
    assert response.headers["location"] == await article_url(services, articles[0])
    assert await counters(services, articles[0]) == (0, 1)
    trend = await ranking(services.redis, TrendingWindow.HOUR.span, datetime.now(UTC))
    assert [(t.story_id, t.engagement) for t in trend] == [(story_id, 2.0)]  # a share weighs 2, as engagementRecord's


async def test_clicks_are_counted_once_per_reader_and_day_by_referrer_and_previews_apart(
    gql: GraphQLClient, services: Services, settings: Settings, web: httpx.AsyncClient
) -> None:
    story_id, articles = await a_story(services, settings)
    reader = gql.as_(await sign_up(gql))
    code = (await share(reader, articleId=global_id("Article", articles[0])))["shareLink"]["code"]
    visits = [
        ("GET", {"referer": "https://www.reddit.com/r/news/comments/1"}, "203.0.113.1"),
        ("GET", {"referer": "https://www.reddit.com/r/news/comments/1"}, "203.0.113.1"),  # the same reader again
        ("GET", {"referer": "https://news.ycombinator.com/item?id=1"}, "203.0.113.2"),
        ("GET", {}, "203.0.113.3"),  # no referrer
        ("GET", {"user-agent": "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"}, "203.0.113.4"),
        ("GET", {"sec-purpose": "prefetch"}, "203.0.113.5"),
        ("HEAD", {}, "203.0.113.6"),
    ]
    trusted = services.rate_limits.trusted_proxies
    services.rate_limits.trusted_proxies = (ipaddress.ip_network("127.0.0.1/32"),)  # each visit from its own address
    try:
        for method, headers, address in visits:
            response = await web.request(method, f"/s/{code}", headers={**headers, "x-forwarded-for": address})
            assert response.status_code == 302
    finally:
        services.rate_limits.trusted_proxies = trusted
    assert await counters(services, articles[0]) == (0, 1)  # nothing written on the redirect path

    assert await flush_share_clicks_job({"services": services}) == 3
    assert await counters(services, articles[0]) == (3, 1)
    data = (await reader.run("ShareLink", code=code, days=7))["shareLink"]
    clicks = data["clicks"]
    assert (clicks["total"], clicks["previews"]) == (3, 3)
    assert len(clicks["byDay"]) == 7
    assert clicks["byDay"][-1] == {
        "day": datetime.now(UTC).date().isoformat(),
        "clicks": 3,
        "previews": 3,
    }
    assert clicks["byReferrer"] == [{"host": "", "clicks": 1}, {"host": "news.ycombinator.com", "clicks": 1},
                                    {"host": "reddit.com", "clicks": 1}]  # fmt: skip
    assert data["target"]["clickCount"] == 3
    trend = await ranking(services.redis, TrendingWindow.HOUR.span, datetime.now(UTC))
    assert [(t.story_id, t.engagement) for t in trend] == [(story_id, 2.0 + 3.0)]  # the share, then three clicks
    other = gql.as_(await sign_up(gql, "other@example.com"))
    assert (await other.run("ShareLink", code=code))["shareLink"] is None  # not theirs to read


async def test_a_flush_that_died_after_its_commit_is_not_applied_twice(services: Services, gql: GraphQLClient,
                                                                        settings: Settings,
                                                                        web: httpx.AsyncClient) -> None:  # fmt: skip
    _, articles = await a_story(services, settings)
    reader = gql.as_(await sign_up(gql))
    code = (await share(reader, articleId=global_id("Article", articles[0])))["shareLink"]["code"]
    assert (await web.get(f"/s/{code}")).status_code == 302
    pending = await services.redis.hgetall(PENDING)
    flushed = await flush_clicks(services.db, services.redis, datetime.now(UTC))
    assert flushed.clicks == 1
    async with services.db() as session:
        batch = await session.scalar(select(ShareClickBatch.id))
    assert batch is not None
    # the flush wrote its batch, then died before clearing Redis: the batch is still there on the next run
    await services.redis.hset(FLUSHING, mapping=pending)
    await services.redis.set(FLUSHING_ID, batch.hex)
    again = await flush_clicks(services.db, services.redis, datetime.now(UTC))
    assert again.clicks == 0
    assert await counters(services, articles[0]) == (1, 1)
    assert not await services.redis.exists(FLUSHING, FLUSHING_ID)


async def test_a_deleted_article_answers_gone_even_once_its_link_was_cached(
    gql: GraphQLClient, services: Services, settings: Settings, web: httpx.AsyncClient
) -> None:
    _, articles = await a_story(services, settings, outlets=3)
    reader = gql.as_(await sign_up(gql))
    cached = (await share(reader, articleId=global_id("Article", articles[0])))["shareLink"]["code"]
    uncached = (await share(reader, articleId=global_id("Article", articles[1])))["shareLink"]["code"]
    assert (await web.get(f"/s/{cached}")).status_code == 302
    async with services.db.begin() as session:
        await session.execute(delete(Article).where(Article.id.in_(articles[:2])))
        gone = list(await session.execute(select(ShareLink.article_id, ShareLink.story_id)))
    assert [tuple(row) for row in gone] == [(None, None)] * 2
    assert (await web.get(f"/s/{uncached}")).status_code == 410
    assert (await web.get(f"/s/{cached}")).status_code == 302  # still cached until the workers evict it
    await flush_share_clicks_job({"services": services})
    response = await web.get(f"/s/{cached}")
    assert response.status_code == 410
    assert "no longer available" in response.text
    assert (await reader.run("ShareLink", code=cached))["shareLink"]["target"] is None


async def test_a_story_link_follows_the_story_it_merged_into_or_a_story_page(
    services: Services, settings: Settings, gql: GraphQLClient
) -> None:
    old, _ = await a_story(services, settings)
    sources = [await add_source(services, settings, f"later{k}") for k in range(2)]
    survivor, survivor_articles = await add_story(services, StorySpec("Bridge reopened", sources),
                                                  datetime.now(UTC) + timedelta(minutes=1))  # fmt: skip
    reader = gql.as_(await sign_up(gql))
    code = (await share(reader, storyId=global_id("Story", old)))["shareLink"]["code"]
    async with services.db.begin() as session:  # what the merge pass leaves: the old story points at the survivor
        await session.execute(update(StoryCluster).where(StoryCluster.id == old).values(merged_into_id=survivor))
    async with services.db() as session:
        merged = await destination(session, code, None)
        page = await destination(session, code, "https://news.example/stories/{story_id}")
    assert merged is not None
    assert merged.url == await article_url(services, survivor_articles[0])
    assert page is not None
    assert page.url == f"https://news.example/stories/{survivor}"


def test_the_workers_flush_share_clicks_on_their_schedule(settings: Settings) -> None:
    from jobs.worker import worker_options

    crons = {job.name: job for job in worker_options(settings)["cron_jobs"]}
    flush = next(job for name, job in crons.items() if "flush_share_clicks" in name)
    assert flush.second == set(range(0, 60, settings.share_click_flush_seconds))
