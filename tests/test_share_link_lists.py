"""viewer.shareLinks: a reader's own links, newest first, in pages with opaque cursors, each with its target and
total clicks, in a number of statements that does not grow with the page."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import insert, select, text

from app.services import Services
from app.settings import Settings
from app.sharing import codes
from app.sharing.models import ShareLink, ShareLinkDay, ShareTargetKind
from app.sharing.service import MAX_DAYS
from app.users.models import User
from jobs.sharing import flush_share_clicks_job
from tests.conftest import GraphQLClient, count_queries, document, statements_per_page
from tests.newsroom import StorySpec, add_source, add_story, global_id, sign_up
from tests.test_redis_outage import stored_articles

BROWSER = "Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0"


@pytest.fixture
async def web(api_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=api_url, follow_redirects=False, headers={"user-agent": BROWSER}) as http:
        yield http


async def a_story(services: Services, settings: Settings, outlets: int) -> tuple[int, list[int]]:
    sources = [await add_source(services, settings, f"outlet{k}") for k in range(outlets)]
    return await add_story(services, StorySpec("Harbour bridge reopens after repairs", sources))


async def share(reader: GraphQLClient, kind: str, row_id: int) -> str:
    data = await reader.run("ShareLinkCreate", input={f"{kind.lower()}Id": global_id(kind, row_id)})
    code: str = data["shareLinkCreate"]["shareLink"]["code"]
    return code


async def page(reader: GraphQLClient, first: int, after: str | None = None) -> dict[str, Any]:
    connection: dict[str, Any] = (await reader.run("MyShareLinks", first=first, after=after))["viewer"]["shareLinks"]
    return connection


async def test_a_reader_pages_through_their_own_links_newest_first_with_targets_and_clicks(
    gql: GraphQLClient, services: Services, settings: Settings, web: httpx.AsyncClient
) -> None:
    story, articles = await a_story(services, settings, outlets=4)
    reader = gql.as_(await sign_up(gql))
    other = gql.as_(await sign_up(gql, "other@example.com"))
    made = [await share(reader, "Article", a) for a in articles] + [await share(reader, "Story", story)]
    await share(other, "Article", articles[0])
    assert (await web.get(f"/s/{made[0]}")).status_code == 302
    await flush_share_clicks_job({"services": services})
    async with services.db.begin() as session:  # clicks of an earlier day, flushed long ago
        first_link = await session.scalar(select(ShareLink.id).where(ShareLink.code == made[0]))
        assert first_link is not None
        long_ago = datetime.now(UTC).date() - timedelta(days=40)
        session.add(ShareLinkDay(link_id=first_link, day=long_ago, referrer_host="", clicks=4, previews=9))
    seen: list[dict[str, Any]] = []
    cursor = None
    for _ in range(3):
        connection = await page(reader, 2, cursor)
        seen += [edge["node"] for edge in connection["edges"]]
        cursor = connection["pageInfo"]["endCursor"]
    assert not connection["pageInfo"]["hasNextPage"]
    assert [node["code"] for node in seen] == made[::-1]  # every link once, newest first, none of the other's
    assert seen[0]["target"] == {"__typename": "Story", "id": global_id("Story", story),
                                 "title": "Harbour bridge reopens after repairs"}  # fmt: skip
    assert seen[-1]["target"]["id"] == global_id("Article", articles[0])
    assert [node["totalClicks"] for node in seen] == [0, 0, 0, 0, 5]  # one today, four 40 days ago
    assert (await page(gql.as_(await sign_up(gql, "new@example.com")), 5))["edges"] == []


@pytest.mark.parametrize("after", [
    "garbage", "", "!!!!", base64.urlsafe_b64encode(b'["story","2026-11-26T10:00:00+00:00",1]').decode(),
    base64.urlsafe_b64encode(b'["shareLink","not a time",1]').decode(),
    base64.urlsafe_b64encode(b'["shareLink","2026-11-26T10:00:00+00:00",99999999999999999999999]').decode(),
    base64.urlsafe_b64encode(b'["shareLink","2026-11-26T10:00:00+00:00"]').decode(), "A" * 20_000,
])  # fmt: skip
async def test_a_cursor_not_from_this_list_is_bad_cursor(gql: GraphQLClient, after: str) -> None:
    reader = gql.as_(await sign_up(gql))
    body = await reader.post(document("MyShareLinks"), {"first": 5, "after": after})
    assert body["errors"][0]["extensions"]["code"] == "BAD_CURSOR", body
    assert body["data"] is None or body["data"]["viewer"] is None


async def test_a_page_of_links_costs_the_same_statements_whatever_its_size(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    story, articles = await a_story(services, settings, outlets=6)
    reader = gql.as_(await sign_up(gql))
    for article in articles:
        await share(reader, "Article", article)
    await share(reader, "Story", story)
    query = document("MyShareLinks").replace("$first: Int = 20", "$n: Int").replace("first: $first", "first: $n")
    counts = await statements_per_page(reader, services, query, [2, 7])  # a story and articles in each
    assert counts[0] == counts[1], counts


FULL_PAGE_CLICKS = """
        clicks(days: $days) {
          total
          previews
          byDay { day clicks previews }
          byReferrer { host clicks }
        }
        totalClicks"""


async def a_hundred_links_with_a_year_of_clicks(gql: GraphQLClient, services: Services,
                                                settings: Settings) -> GraphQLClient:  # fmt: skip
    """A reader with `page_size_max` links, each clicked every day of the last MAX_DAYS from three sites."""
    reader = gql.as_(await sign_up(gql))
    _, articles = await stored_articles(services, settings, settings.page_size_max)
    key = await services.share_key.read()
    async with services.db.begin() as session:
        creator = await session.scalar(select(User.id).where(User.email == "reader@example.com"))
        rows = [{"code": codes.mint(key), "creator_id": creator, "article_id": a,
                 "target_kind": ShareTargetKind.ARTICLE} for a in articles]  # fmt: skip
        await session.execute(insert(ShareLink), rows)
        await session.execute(text("""
            INSERT INTO share_link_days (link_id, day, referrer_host, clicks, previews)
            SELECT l.id, current_date - back, 'site' || s || '.example', 1, 2
              FROM share_links l, generate_series(0, :span - 1) back, generate_series(1, 3) s
        """), {"span": MAX_DAYS})  # fmt: skip
    return reader


async def test_a_year_of_clicks_for_many_links_is_priced_by_its_days_and_read_in_one_statement(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    reader = await a_hundred_links_with_a_year_of_clicks(gql, services, settings)
    query = (document("MyShareLinks").replace("$first: Int = 20", "$n: Int, $days: Int = 366")
             .replace("first: $first", "first: $n").replace("\n          totalClicks", FULL_PAGE_CLICKS))  # fmt: skip
    # a full page of links with a year each is 36,700 nodes: refused, typed, before anything is read
    with count_queries(services) as statements:
        body = await reader.post(query, {"n": settings.page_size_max})
    assert body["errors"][0]["extensions"]["code"] == "QUERY_TOO_COMPLEX", body
    assert not any("share_link_days" in statement for statement in statements)
    # half of it is answered whole, in as many statements as two links take
    half = settings.page_size_max // 2
    small, large = await statements_per_page(reader, services, query, [2, half])
    assert small == large
    edges = (await reader.post(query, {"n": half}))["data"]["viewer"]["shareLinks"]["edges"]
    assert len(edges) == half
    for clicks in (edge["node"]["clicks"] for edge in edges):
        assert (clicks["total"], clicks["previews"], len(clicks["byDay"])) == (3 * MAX_DAYS, 6 * MAX_DAYS, MAX_DAYS)
        assert clicks["byReferrer"] == [{"host": f"site{s}.example", "clicks": MAX_DAYS} for s in (1, 2, 3)]
    # and a longer span than a year is refused, typed
    body = await reader.post(query, {"n": 2, "days": MAX_DAYS + 1})
    assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT", body
