"""viewer.shareLinks: a reader's own links, newest first, in pages with opaque cursors, each with its target and
total clicks, in a number of statements that does not grow with the page."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from app.services import Services
from app.settings import Settings
from app.sharing.models import ShareLink, ShareLinkDay
from app.sharing.redirects import ShareRedirects
from jobs.sharing import flush_share_clicks_job
from tests.conftest import GraphQLClient, document, statements_per_page
from tests.newsroom import StorySpec, add_source, add_story, global_id, sign_up

BROWSER = "Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0"


@pytest.fixture(autouse=True)
def fresh_signing_key() -> None:
    ShareRedirects.forget_keys()


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
