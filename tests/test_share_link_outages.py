"""Share links across outages: PostgreSQL gone for ten seconds while clicks are flushed or caches evicted, and Redis
killed in the middle of a flush. No click is lost that Redis still holds, none is counted twice, the redirect keeps
answering, and the work finishes once the server is back.

Each test runs a server of its own (a cuttable proxy in front of PostgreSQL, or a Redis of its own), so stopping it
touches nobody else."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY
from redis.exceptions import RedisError
from sqlalchemy import delete, event, func, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from app.articles.models import Article
from app.services import Services
from app.settings import Settings
from app.sharing.counters import FLUSHING, PENDING
from app.sharing.eviction import evict_changed
from app.sharing.flush import flush_clicks
from app.sharing.models import ShareLinkDay, ShareLinkEviction
from app.sharing.redirects import Outcome, ShareRedirects
from app.sharing.visits import visit_of
from jobs.sharing import flush_share_clicks_job
from tests.conftest import GraphQLClient, count_queries
from tests.newsroom import StorySpec, add_source, add_story, global_id, sign_up
from tests.test_ingest_outages import OUTAGE_SECONDS, CutProxy
from tests.test_redis_outage import own_redis, services_on

BROWSER = "Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0"
DOWN = (SQLAlchemyError, OSError)
REDIS_DOWN = (RedisError, OSError)


async def shared_links(gql: GraphQLClient, services: Services, settings: Settings,
                       n: int) -> tuple[list[str], list[int]]:  # fmt: skip
    """(codes, article ids) of one reader's links to the `n` articles of a story."""
    sources = [await add_source(services, settings, f"outlet{k}") for k in range(n)]
    _, articles = await add_story(services, StorySpec("Harbour bridge reopens after repairs", sources))
    reader = gql.as_(await sign_up(gql))
    codes = []
    for article in articles:
        data = await reader.run("ShareLinkCreate", input={"articleId": global_id("Article", article)})
        codes.append(data["shareLinkCreate"]["shareLink"]["code"])
    return codes, articles


async def click(redirects: ShareRedirects, codes: list[str], readers: range) -> None:
    """Each reader follows each link once (from an address of their own: each is a click)."""
    for reader in readers:
        for code in codes:
            visit = visit_of("GET", BROWSER, "https://news.example/", None, f"198.51.{reader // 250}.{reader % 250}")
            assert (await redirects.follow(code, visit)).outcome is Outcome.FOUND


async def written(services: Services) -> tuple[int, int]:
    """(clicks in share_link_days, clicks in articles.click_count), read from the shared server."""
    async with services.db() as session:
        days = await session.scalar(select(func.coalesce(func.sum(ShareLinkDay.clicks), 0)))
        articles = await session.scalar(select(func.coalesce(func.sum(Article.click_count), 0)))
    return int(days or 0), int(articles or 0)


@contextlib.asynccontextmanager
async def behind_proxy(settings: Settings) -> AsyncIterator[tuple[Services, CutProxy]]:
    """Services whose PostgreSQL is the shared one through a proxy that can be cut (Redis: the shared one)."""
    url = make_url(settings.database_url)
    proxy = CutProxy(url.port or 5432)
    await proxy.start()
    own = Services.open(settings.model_copy(update={"database_url": url.set(port=proxy.port).render_as_string(False)}))
    try:
        yield own, proxy
    finally:
        await own.close()
        with contextlib.suppress(AssertionError):
            await proxy.cut()


async def test_clicks_flushed_while_postgresql_is_away_are_written_once_when_it_returns(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    codes, _ = await shared_links(gql, services, settings, 4)
    redirects = ShareRedirects(services.db, services.redis, settings, services.share_key)
    async with behind_proxy(settings) as (own, proxy):
        # given 4 links clicked by 10 readers each, waiting in Redis
        await click(redirects, codes, range(10))
        # when PostgreSQL goes away for ten seconds while the flush runs, twice, and 5 more readers click meanwhile
        await proxy.cut()
        started = time.monotonic()
        with pytest.raises(DOWN):
            await flush_clicks(own.db, own.redis, now=datetime.now(UTC))
        parked = await services.redis.hgetall(FLUSHING)
        await click(redirects, codes, range(10, 15))
        with pytest.raises(DOWN):
            await flush_clicks(own.db, own.redis, now=datetime.now(UTC))
        assert await services.redis.hgetall(FLUSHING) == parked  # the same batch waits, nothing added to it
        assert sum(int(n) for n in parked.values()) == 40
        await asyncio.sleep(max(0.0, OUTAGE_SECONDS - (time.monotonic() - started)))
        await proxy.start()
        # then the parked batch, then the clicks counted meanwhile, are written once each, in one run
        assert (await flush_clicks(own.db, own.redis, now=datetime.now(UTC))).clicks == 40 + 20
        assert (await flush_clicks(own.db, own.redis, now=datetime.now(UTC))).clicks == 0
    assert await written(services) == (60, 60)
    assert not await services.redis.exists(PENDING, FLUSHING)


async def test_eviction_while_postgresql_is_away_fails_cleanly_and_completes_later(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    codes, articles = await shared_links(gql, services, settings, 2)
    redirects = ShareRedirects(services.db, services.redis, settings, services.share_key)
    await click(redirects, codes, range(1))  # cached
    async with services.db.begin() as session:  # the article goes: its link's code is queued for eviction
        await session.execute(delete(Article).where(Article.id == articles[0]))
    async with behind_proxy(settings) as (own, proxy):
        await proxy.cut()
        with pytest.raises(DOWN):
            await evict_changed(own.db, own.redis)
        with pytest.raises(DOWN):
            await flush_share_clicks_job({"services": own})
        assert await queued(services) == 1  # still queued: nothing was taken
        visit = visit_of("GET", BROWSER, None, None, "203.0.113.9")
        assert (await redirects.follow(codes[0], visit)).outcome is Outcome.FOUND  # the stale cache, until evicted
        await proxy.start()
        assert await flush_share_clicks_job({"services": own}) == 3  # the clicks, then the eviction
    assert await queued(services) == 0
    assert (await redirects.follow(codes[0], visit)).outcome is Outcome.GONE
    assert (await redirects.follow(codes[1], visit)).outcome is Outcome.FOUND


async def queued(services: Services) -> int:
    async with services.db() as session:
        return int(await session.scalar(select(func.count()).select_from(ShareLinkEviction)) or 0)


def uncounted() -> float:
    return REGISTRY.get_sample_value("newsagg_share_link_visits_uncounted_total", {"kind": "click"}) or 0.0


async def test_redis_killed_mid_flush_loses_no_written_click_and_counts_none_twice(
    gql: GraphQLClient, services: Services, settings: Settings, tmp_path: Path
) -> None:
    codes, _ = await shared_links(gql, services, settings, 3)
    with own_redis(tmp_path / "redis") as server:
        async with services_on(settings, server) as own:
            redirects = ShareRedirects(own.db, own.redis, settings, own.share_key)
            await click(redirects, codes, range(5))

            # when Redis is killed (nothing kept on disk) as the flush commits what it read
            def kill(*_: Any) -> None:
                server.stop()

            event.listen(own.engine.sync_engine, "commit", kill)
            try:
                with pytest.raises(REDIS_DOWN):
                    await flush_clicks(own.db, own.redis, now=datetime.now(UTC))
            finally:
                event.remove(own.engine.sync_engine, "commit", kill)
            assert await written(services) == (15, 15)  # what it read was written

            # then while Redis is away links are still followed, from PostgreSQL, their clicks dropped and counted so
            before = uncounted()
            with count_queries(own) as statements:
                await click(redirects, codes, range(5, 7))
            assert uncounted() - before == 6
            assert len(statements) == 6  # one lookup a visit

            # and once it is back (empty), nothing is written again, and the cache fills on the first visit
            server.start()
            assert (await flush_clicks(own.db, own.redis, now=datetime.now(UTC))).clicks == 0
            assert await written(services) == (15, 15)
            with count_queries(own) as first:
                await click(redirects, codes[:1], range(7, 8))
            with count_queries(own) as second:
                await click(redirects, codes[:1], range(8, 9))
            assert (len(first), len(second)) == (1, 0)
            assert (await flush_clicks(own.db, own.redis, now=datetime.now(UTC))).clicks == 2
    assert await written(services) == (17, 17)


async def test_a_batch_postgresql_refuses_does_not_hold_back_eviction(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    codes, articles = await shared_links(gql, services, settings, 1)
    redirects = ShareRedirects(services.db, services.redis, settings, services.share_key)
    await click(redirects, codes, range(1))
    async with services.db.begin() as session:
        await session.execute(delete(Article).where(Article.id == articles[0]))
    field = next(iter(await services.redis.hkeys(PENDING)))
    await services.redis.hset(PENDING, field, 2**40)  # past an integer column: the batch cannot be written
    with pytest.raises(SQLAlchemyError):
        await flush_share_clicks_job({"services": services})
    assert await queued(services) == 0
    visit = visit_of("GET", BROWSER, None, None, "203.0.113.10")
    assert (await redirects.follow(codes[0], visit)).outcome is Outcome.GONE
