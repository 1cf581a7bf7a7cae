"""The click flush at scale: the counters of thousands of links written in one statement per table (rows passed as
arrays: a VALUES list of them would pass PostgreSQL's 32,767 parameters) and one Redis pipeline."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from sqlalchemy import delete, func, insert, select
from sqlalchemy.exc import DBAPIError

from app.articles.models import Article
from app.services import Services
from app.settings import Settings
from app.sharing import codes
from app.sharing.counters import (
    CLICK,
    FLUSHING,
    PENDING,
    PREVIEW,
    REFUSED,
    SET_ASIDE_SECONDS,
    Cached,
    ShareCounters,
)
from app.sharing.flush import REFUSALS_BEFORE_SET_ASIDE, flush_clicks
from app.sharing.models import ShareLink, ShareLinkDay, ShareTargetKind
from tests.conftest import GraphQLClient, count_queries
from tests.newsroom import sign_up
from tests.test_redis_outage import stored_articles

LINKS = 5000
DELETED = 5


async def links_to(services: Services, gql: GraphQLClient, articles: list[int]) -> list[tuple[int, str, int]]:
    """(link id, code, article id): one reader's link to each article."""
    await sign_up(gql)
    key = await services.share_key.read()
    rows = [{"code": codes.mint(key), "creator_id": 1, "target_kind": ShareTargetKind.ARTICLE, "article_id": a}
            for a in articles]  # fmt: skip
    async with services.db.begin() as session:
        made = await session.execute(insert(ShareLink).returning(ShareLink.id, ShareLink.code, ShareLink.article_id),
                                     rows)  # fmt: skip
        return [tuple(row) for row in made]  # type: ignore[misc]


async def visit_each(services: Services, links: list[tuple[int, str, int]], day: str) -> None:
    """A click from one of seven sites (it fills the cache), then a preview, on every link."""
    counters = ShareCounters(services.redis)
    for start in range(0, len(links), 500):
        batch = links[start : start + 500]
        await asyncio.gather(*(counters.visit(code, Cached(link_id, article, 0, "https://wire.example/"), 3600, CLICK,
                                              day, f"site{link_id % 7}.example", "reader")
                               for link_id, code, article in batch))  # fmt: skip
        await asyncio.gather(*(counters.visit(code, None, 3600, PREVIEW, day, "", "reader") for _, code, _ in batch))


async def test_the_clicks_of_5000_links_are_flushed_in_a_few_statements(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    # given 5,000 links, each clicked once and previewed once today, five of them deleted since
    _, articles = await stored_articles(services, settings, LINKS)
    links = await links_to(services, gql, articles)
    now = datetime.now(UTC)
    await visit_each(services, links, now.strftime("%Y-%m-%d"))
    async with services.db.begin() as session:
        await session.execute(delete(ShareLink).where(ShareLink.id.in_([link for link, _, _ in links[:DELETED]])))
    # when they are flushed
    with count_queries(services) as statements:
        flushed = await flush_clicks(services.db, services.redis, now)
    # then in four statements (the batch's id, the days, the articles, old batch ids forgotten)
    assert len(statements) == 4, statements
    assert (flushed.clicks, flushed.previews, flushed.days) == (LINKS, LINKS, 2 * (LINKS - DELETED))
    async with services.db() as session:
        stored = (await session.execute(select(func.count(), func.sum(ShareLinkDay.clicks),
                                               func.sum(ShareLinkDay.previews)))).one()  # fmt: skip
        clicked = await session.scalar(select(func.count()).where(Article.click_count == 1))
    assert tuple(stored) == (2 * (LINKS - DELETED), LINKS - DELETED, LINKS - DELETED)
    assert clicked == LINKS  # an article counts its clicks whether or not the link is still there
    assert not await services.redis.exists(PENDING, FLUSHING)


async def test_a_batch_postgresql_keeps_refusing_is_set_aside_and_the_clicks_after_it_are_written(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    # given a batch whose count does not fit its column (PostgreSQL refuses it while reachable), and two links
    _, articles = await stored_articles(services, settings, 2)
    (poisoned, _, article), (healthy, healthy_code, other) = await links_to(services, gql, articles)
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    await services.redis.hset(PENDING, f"{poisoned}|{article}|0|{day}|site.example|{CLICK}", str(2**40))
    now = datetime.now(UTC)
    # when the flush runs: it fails twice, keeping the batch, and the third refusal sets it aside
    for _ in range(REFUSALS_BEFORE_SET_ASIDE - 1):
        with pytest.raises(DBAPIError):
            await flush_clicks(services.db, services.redis, now)
        assert await services.redis.exists(FLUSHING)
        fill = Cached(healthy, other, 0, "https://wire.example/")
        await ShareCounters(services.redis).visit(healthy_code, fill, 3600, CLICK, day, "news.example", "reader")
    flushed = await flush_clicks(services.db, services.redis, now)
    # then the clicks counted meanwhile are written, and the refused batch waits in Redis under its id for an operator
    assert flushed.clicks == 1
    async with services.db() as session:
        days = (await session.execute(select(ShareLinkDay.link_id, ShareLinkDay.clicks))).all()
    assert [tuple(row) for row in days] == [(healthy, 1)]
    aside = [key async for key in services.redis.scan_iter(match=REFUSED + "*")]
    assert len(aside) == 1
    assert not await services.redis.exists(FLUSHING, PENDING)
    assert 0 < await services.redis.ttl(aside[0]) <= SET_ASIDE_SECONDS
    assert (await flush_clicks(services.db, services.redis, now)).clicks == 0
