"""Share links never lead to a stale place for long: every writer of what a cached destination is made of queues the
link's code (triggers, migration 0026) and the workers' flush evicts it, while the redirect itself stays Redis-only."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from redis.asyncio import Redis
from redis.exceptions import RedisError
from sqlalchemy import delete, func, select, text, update

from app.articles.models import Article
from app.articles.repository import NewArticle, insert_new
from app.services import Services
from app.settings import Settings
from app.sharing.counters import PREFIX
from app.sharing.eviction import evict_changed
from app.sharing.models import ShareLinkEviction
from app.sources.service import SourceRequest, create_source
from app.stories.models import StoryCluster
from app.stories.repair import delete_articles
from app.stories.service import merge_stories
from app.stories.store import resolve
from app.users.models import User
from jobs.sharing import flush_share_clicks_job
from tests.conftest import GraphQLClient, count_queries
from tests.newsroom import StorySpec, add_source, add_story, global_id, sign_up, two_stories_of_one_event

BROWSER = "Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0"


@pytest.fixture
async def web(api_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=api_url, follow_redirects=False, headers={"user-agent": BROWSER}) as http:
        yield http


async def shared(reader: GraphQLClient, kind: str, row_id: int) -> str:
    data = await reader.run("ShareLinkCreate", input={f"{kind.lower()}Id": global_id(kind, row_id)})
    code: str = data["shareLinkCreate"]["shareLink"]["code"]
    return code


async def urls(services: Services, article_ids: list[int]) -> list[str]:
    async with services.db() as session:
        rows = await session.execute(select(Article.id, Article.url).where(Article.id.in_(article_ids)))
        by_id = {row.id: row.url for row in rows}
    return [by_id[a] for a in article_ids]


async def stored(services: Services, settings: Settings, titles: list[str]) -> list[int]:
    """One article per title, each from its own outlet, not in any story yet."""
    ids = []
    now = datetime.now(UTC)
    async with services.db.begin() as session:
        for k, title in enumerate(titles):
            source = await create_source(session, settings, SourceRequest(
                feed_url=f"http://127.0.0.1:9/outlet{k}", name=f"Outlet {k}", authority=0.1 * (k + 1)))  # fmt: skip
            new = NewArticle(source.id, f"e{k}", f"https://o{k}.example/{k}", title, "", None,
                             now + timedelta(seconds=k), k)  # fmt: skip
            ids += [a.id for a in await insert_new(session, [new])]
    return ids


async def queued(services: Services) -> int:
    async with services.db() as session:
        return await session.scalar(select(func.count()).select_from(ShareLinkEviction)) or 0


async def story_of(services: Services, settings: Settings, title: str, outlets: int = 3) -> tuple[int, list[int]]:
    sources = [await add_source(services, settings, f"{title[:6].lower()}{k}") for k in range(outlets)]
    return await add_story(services, StorySpec(title, sources))


async def test_a_story_link_follows_a_new_representative_once_the_workers_evict_it(
    gql: GraphQLClient, services: Services, settings: Settings, web: httpx.AsyncClient
) -> None:
    story, articles = await story_of(services, settings, "Harbour bridge reopens after repairs")
    reader = gql.as_(await sign_up(gql))
    code = await shared(reader, "Story", story)
    first, *others = await urls(services, articles)
    assert (await web.get(f"/s/{code}")).headers["location"] == first
    async with services.db.begin() as session:  # its source deleted: the story is repaired, represented anew
        await delete_articles(session, text("DELETE FROM articles WHERE id = :id RETURNING cluster_id"),
                              {"id": articles[0]}, [])  # fmt: skip
    async with services.db() as session:
        lead = await session.scalar(select(StoryCluster.representative_article_id).where(StoryCluster.id == story))
    assert lead in articles[1:]
    assert (await web.get(f"/s/{code}")).headers["location"] == first  # cached: the redirect asks no database
    await flush_share_clicks_job({"services": services})
    assert (await web.get(f"/s/{code}")).headers["location"] == others[articles[1:].index(lead)]
    assert await queued(services) == 0


async def test_a_story_link_follows_the_story_it_merged_into_once_the_workers_evict_it(
    gql: GraphQLClient, services: Services, settings: Settings, web: httpx.AsyncClient
) -> None:
    titles = ["Plosser taper weather Fed", "Fed Plosser taper weather data"]
    article_ids = await stored(services, settings, titles)
    stories = await two_stories_of_one_event(services, article_ids, titles)
    reader = gql.as_(await sign_up(gql))
    codes = [await shared(reader, "Story", story) for story in stories]
    before = [(await web.get(f"/s/{code}")).headers["location"] for code in codes]
    assert before == await urls(services, article_ids)
    assert await merge_stories(services.engine, datetime.now(UTC)) == 1  # the merge pass joins them
    assert [(await web.get(f"/s/{code}")).headers["location"] for code in codes] == before  # cached
    await flush_share_clicks_job({"services": services})
    after = {(await web.get(f"/s/{code}")).headers["location"] for code in codes}
    assert len(after) == 1  # both lead where the surviving story leads
    async with services.engine.connect() as connection:
        survivor = await resolve(connection, stories[0])
    async with services.db() as session:
        lead = await session.scalar(select(StoryCluster.representative_article_id)
                                    .where(StoryCluster.id == survivor))  # fmt: skip
    assert after == set(await urls(services, [lead or 0]))
    other = next(a for a in article_ids if a != lead)  # the survivor represented anew: the merged story's link too
    async with services.db.begin() as session:
        await session.execute(update(StoryCluster).where(StoryCluster.id == survivor)
                              .values(representative_article_id=other))  # fmt: skip
    await flush_share_clicks_job({"services": services})
    assert {(await web.get(f"/s/{code}")).headers["location"] for code in codes} == set(await urls(services, [other]))
    async with services.db.begin() as session:  # and its URL renormalised
        await session.execute(update(Article).where(Article.id == other).values(url="https://renamed.example/2"))
    await flush_share_clicks_job({"services": services})
    assert {(await web.get(f"/s/{code}")).headers["location"] for code in codes} == {"https://renamed.example/2"}


async def test_a_deleted_account_takes_its_cached_links_with_it(
    gql: GraphQLClient, services: Services, settings: Settings, web: httpx.AsyncClient
) -> None:
    story, articles = await story_of(services, settings, "Harbour bridge reopens after repairs")
    leaving = gql.as_(await sign_up(gql, "leaving@example.com"))
    staying = gql.as_(await sign_up(gql, "staying@example.com"))
    theirs = [await shared(leaving, "Article", articles[0]), await shared(leaving, "Story", story)]
    kept = await shared(staying, "Article", articles[0])
    for code in [*theirs, kept]:
        assert (await web.get(f"/s/{code}")).status_code == 302
    async with services.db.begin() as session:  # the account goes; its links go with it (ON DELETE CASCADE)
        await session.execute(delete(User).where(User.email == "leaving@example.com"))
    assert [(await web.get(f"/s/{code}")).status_code for code in theirs] == [302, 302]  # the cache lives on
    await flush_share_clicks_job({"services": services})
    assert [(await web.get(f"/s/{code}")).status_code for code in theirs] == [404, 404]
    assert (await web.get(f"/s/{kept}")).status_code == 302


async def test_a_renormalised_url_reaches_article_and_story_links(
    gql: GraphQLClient, services: Services, settings: Settings, web: httpx.AsyncClient
) -> None:
    story, articles = await story_of(services, settings, "Harbour bridge reopens after repairs")
    reader = gql.as_(await sign_up(gql))
    codes = [await shared(reader, "Article", articles[0]), await shared(reader, "Story", story)]
    for code in codes:
        assert (await web.get(f"/s/{code}")).status_code == 302
    async with services.db.begin() as session:
        await session.execute(update(Article).where(Article.id == articles[0]).values(url="https://renamed.example/1"))
    await flush_share_clicks_job({"services": services})
    assert [(await web.get(f"/s/{c}")).headers["location"] for c in codes] == ["https://renamed.example/1"] * 2


async def test_writes_that_change_no_destination_queue_nothing(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    story, articles = await story_of(services, settings, "Harbour bridge reopens after repairs")
    reader = gql.as_(await sign_up(gql))
    await shared(reader, "Story", story)
    await shared(reader, "Article", articles[1])
    async with services.db.begin() as session:  # what every clustering save and counter flush writes
        await session.execute(update(StoryCluster).where(StoryCluster.id == story).values(
            representative_article_id=StoryCluster.representative_article_id, velocity=3.0))  # fmt: skip
        await session.execute(update(Article).where(Article.id.in_(articles))
                              .values(click_count=Article.click_count + 1, url=Article.url))  # fmt: skip
    assert await queued(services) == 0


async def test_many_changes_are_evicted_in_batches_of_set_based_statements(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    story, articles = await story_of(services, settings, "Harbour bridge reopens after repairs")
    readers = [gql.as_(await sign_up(gql, f"r{k}@example.com")) for k in range(30)]
    codes = [await shared(r, "Story", story) for r in readers]
    async with services.db.begin() as session:
        await session.execute(update(StoryCluster).where(StoryCluster.id == story)
                              .values(representative_article_id=articles[2]))  # fmt: skip
        await session.execute(text("INSERT INTO share_link_evictions (code) SELECT code FROM share_link_evictions"))
    cached = [PREFIX + "link:" + c for c in codes]
    await services.redis.mset(dict.fromkeys(cached, "1 0 1 https://stale.example/"))
    with count_queries(services) as statements:
        assert await evict_changed(services.db, services.redis) == 30
    assert len(statements) <= 3  # one DELETE ... RETURNING per batch (and the transaction's edges), not per code
    assert await services.redis.exists(*cached) == 0
    assert await queued(services) == 0


async def test_codes_stay_queued_while_redis_cannot_forget_them(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    _, articles = await story_of(services, settings, "Harbour bridge reopens after repairs")
    reader = gql.as_(await sign_up(gql))
    await shared(reader, "Article", articles[0])
    async with services.db.begin() as session:
        await session.execute(delete(Article).where(Article.id == articles[0]))
    assert await queued(services) == 1
    gone = Redis(host="127.0.0.1", port=1, socket_connect_timeout=1)  # nothing listens there
    try:
        with pytest.raises((RedisError, OSError)):
            await evict_changed(services.db, gone)
    finally:
        await gone.aclose()
    assert await queued(services) == 1  # the batch was not taken: the next run evicts it
    assert await evict_changed(services.db, services.redis) == 1
