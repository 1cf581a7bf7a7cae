"""Hostile visits to /s/<code>: floods of made-up codes, huge and odd paths, a Redis that is gone. None of them may
cost a database query per request or grow Redis; the pure parts (codes, visits) are checked on their own."""

from __future__ import annotations

import asyncio
import base64
import secrets
from collections.abc import AsyncIterator
from urllib.parse import quote

import httpx
import pytest
from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import create_async_engine

from app.db.engine import session_factory
from app.runtime.processes import free_port
from app.services import Services
from app.settings import Settings
from app.sharing import codes
from app.sharing.keys import SigningKey
from app.sharing.redirects import Outcome, ShareRedirects
from app.sharing.service import MAX_DAYS
from app.sharing.visits import OTHER, is_preview, referrer_host, visit_of
from tests.conftest import GraphQLClient, count_queries, document
from tests.newsroom import PASSWORD, StorySpec, add_source, add_story, global_id, log_in, sign_up

BROWSER = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) Safari/605.1.15"
FLOOD = 3000
FULL_WIDTH = "".join(chr(0xFF21 + k) for k in range(16))  # full-width A to P: letters to `str.isalnum`, not ASCII


@pytest.fixture
async def web(api_url: str) -> AsyncIterator[httpx.AsyncClient]:
    limits = httpx.Limits(max_connections=32, max_keepalive_connections=32)
    async with httpx.AsyncClient(base_url=api_url, headers={"user-agent": BROWSER}, limits=limits) as http:
        yield http


async def shared_link(gql: GraphQLClient, services: Services, settings: Settings) -> tuple[str, str]:
    """(code, article URL) of a reader's link to a fresh article."""
    source = await add_source(services, settings, "harbour-times")
    _, articles = await add_story(services, StorySpec("Ferry strike ends", [source]))
    reader = gql.as_(await sign_up(gql))
    data = await reader.run("ShareLinkCreate", input={"articleId": global_id("Article", articles[0])})
    link = data["shareLinkCreate"]["shareLink"]
    return link["code"], link["target"]["url"]


async def log_in_token(gql: GraphQLClient) -> str:
    """The bearer token of the reader `shared_link` signed up."""
    token: str = (await log_in(gql, "reader@example.com", PASSWORD))["token"]
    return token


async def statuses(web: httpx.AsyncClient, paths: list[str]) -> set[int]:
    seen: set[int] = set()
    for start in range(0, len(paths), 64):
        replies = await asyncio.gather(*(web.get(path) for path in paths[start : start + 64]))
        seen |= {reply.status_code for reply in replies}
    return seen


def random_code() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(12)).decode()


async def test_a_flood_of_made_up_codes_costs_no_query_and_no_redis_key(
    gql: GraphQLClient, services: Services, settings: Settings, web: httpx.AsyncClient
) -> None:
    code, _ = await shared_link(gql, services, settings)
    assert (await web.get(f"/s/{code}", follow_redirects=False)).status_code == 302  # the key is read once
    keys_before, share_keys = await services.redis.dbsize(), await share_keys_of(services)
    forged = [code[:-1] + ("A" if code[-1] != "A" else "B")] + [code[:5] + random_code()[5:] for _ in range(100)]
    with count_queries(services) as statements:
        seen = await statuses(web, [f"/s/{random_code()}" for _ in range(FLOOD)] + [f"/s/{c}" for c in forged])
    assert seen == {404}
    assert statements == []
    assert await share_keys_of(services) == share_keys
    assert await services.redis.dbsize() <= keys_before  # nothing else grew either (some expired meanwhile)


async def share_keys_of(services: Services) -> list[bytes]:
    return sorted([key async for key in services.redis.scan_iter(match="newsagg:share:*")])


async def test_one_visitor_hammering_a_real_link_with_made_up_referrers_counts_once_and_adds_no_keys(
    gql: GraphQLClient, services: Services, settings: Settings, web: httpx.AsyncClient
) -> None:
    code, _ = await shared_link(gql, services, settings)
    assert (await web.get(f"/s/{code}", follow_redirects=False)).status_code == 302
    keys = await share_keys_of(services)
    referrers = [f"https://{secrets.token_hex(8)}.example/{k}" for k in range(500)]
    for start in range(0, len(referrers), 50):
        replies = await asyncio.gather(*(web.get(f"/s/{code}", headers={"referer": referrer}, follow_redirects=False)
                                         for referrer in referrers[start : start + 50]))  # fmt: skip
        assert {reply.status_code for reply in replies} == {302}
    assert await share_keys_of(services) == keys
    pending = await services.redis.hgetall("newsagg:share:pending")
    assert list(pending.values()) == [b"1"]  # the first visit; the rest were the same reader that day


async def test_hostile_share_link_queries_are_answered_or_refused_with_a_typed_error(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    code, _ = await shared_link(gql, services, settings)
    reader = gql.as_(await log_in_token(gql))
    for hostile in ("A" * 10_000, quote(FULL_WIDTH), "", code.lower()):
        assert (await reader.run("ShareLink", code=hostile))["shareLink"] is None
    for days in (-5, 0, MAX_DAYS + 1, 10**9):  # a span past the documented one is refused, typed
        body = await reader.post(document("ShareLink"), {"code": code, "days": days})
        assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT", body
    for days in (1, MAX_DAYS):
        assert len((await reader.run("ShareLink", code=code, days=days))["shareLink"]["clicks"]["byDay"]) == days


async def test_codes_we_signed_but_do_not_hold_are_looked_up_once_each(
    gql: GraphQLClient, services: Services, settings: Settings, web: httpx.AsyncClient
) -> None:
    """A deleted link's code passes the signature: its absence is cached, one key per code ever issued."""
    await shared_link(gql, services, settings)
    key = await services.share_key.read()
    orphans = [codes.mint(key) for _ in range(40)]
    keys_before = len(await share_keys_of(services))
    with count_queries(services) as statements:
        assert await statuses(web, [f"/s/{c}" for c in orphans * 3]) == {404}
    assert len(statements) <= len(orphans) + 2  # a lookup per code, and the signing key read once (two statements)
    assert len(await share_keys_of(services)) == keys_before + len(orphans)


@pytest.mark.parametrize("path", [
    "/s/" + "A" * 10_000,
    "/s/" + quote("ÄÖÜäöüßéèêëïîôœ"),  # 16 letters, not base64url
    "/s/" + quote(FULL_WIDTH),  # full-width Latin: `isalnum`, not ASCII
    "/s/" + quote("١٢٣٤٥٦٧٨٩٠١٢٣٤٥٦"),  # Arabic-Indic digits
    "/s/AAAAAAAAAAAAAAA%00",
    "/s/AAAAAAAA%2FAAAAAAA",
    "/s/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd",
    "/s/AAAAAAAAAAAAAAAA?to=https://evil.example/",
    "/s/https:%2F%2Fevil.example",
])  # fmt: skip
async def test_odd_paths_are_not_found_without_a_query(path: str, services: Services, web: httpx.AsyncClient) -> None:
    assert (await web.get(f"/s/{random_code()}")).status_code == 404  # the signing key is read (made) once
    with count_queries(services) as statements:
        response = await web.get(path, follow_redirects=False)
    assert response.status_code == 404
    assert statements == []
    assert "location" not in response.headers


async def test_a_percent_encoded_code_is_the_same_code(
    gql: GraphQLClient, services: Services, settings: Settings, web: httpx.AsyncClient
) -> None:
    code, url = await shared_link(gql, services, settings)
    encoded = "".join(f"%{ord(c):02X}" for c in code)
    response = await web.get(f"/s/{encoded}", follow_redirects=False)
    assert response.status_code == 302
    assert response.headers["location"] == url


async def test_without_redis_a_link_is_followed_from_postgresql_uncounted(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    code, url = await shared_link(gql, services, settings)
    dead = Redis.from_url(f"redis://127.0.0.1:{free_port()}/0", socket_connect_timeout=0.5)
    try:
        redirects = ShareRedirects(services.db, dead, settings, services.share_key)
        followed = await redirects.follow(code, visit_of("GET", BROWSER, None, None, "198.51.100.7"))
    finally:
        await dead.aclose()
    assert followed.outcome is Outcome.FOUND
    assert followed.url == url


async def test_without_postgresql_an_uncached_link_is_unavailable_not_an_error(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    code, url = await shared_link(gql, services, settings)
    visit = visit_of("GET", BROWSER, None, None, "198.51.100.8")
    engine = create_async_engine(f"postgresql+asyncpg://newsagg@127.0.0.1:{free_port()}/none")
    gone = session_factory(engine)
    try:
        cold = ShareRedirects(gone, services.redis, settings, SigningKey(gone))
        assert (await cold.follow(code, visit)).outcome is Outcome.UNAVAILABLE  # the key cannot be read
        warm = ShareRedirects(services.db, services.redis, settings, services.share_key)
        assert (await warm.follow(code, visit)).outcome is Outcome.FOUND  # its destination is in Redis now
        # a process that read the key before the database went: a cached destination needs no database
        gone_database = ShareRedirects(gone, services.redis, settings, services.share_key)
        followed = await gone_database.follow(code, visit)
        assert followed.outcome is Outcome.FOUND
        assert followed.url == url
        not_cached = codes.mint(await services.share_key.read())
        assert (await gone_database.follow(not_cached, visit)).outcome is Outcome.UNAVAILABLE
    finally:
        await engine.dispose()


def test_a_code_verifies_only_with_its_key_and_its_exact_characters() -> None:
    key, other = codes.new_key(), codes.new_key()
    code = codes.mint(key)
    assert len(code) == codes.CODE_LENGTH
    assert codes.authentic(code, key)
    assert not codes.authentic(code, other)
    assert not codes.authentic(code[:-1], key)
    assert not codes.authentic(code + "A", key)
    assert not codes.authentic(code.swapcase(), key)
    assert not codes.well_formed(FULL_WIDTH)
    assert len({codes.mint(key) for _ in range(10_000)}) == 10_000


def test_previews_and_referrers_are_read_from_the_request() -> None:
    assert is_preview("HEAD", BROWSER, None)
    assert is_preview("GET", BROWSER, "prefetch;anonymous-client-ip")
    assert is_preview("GET", None, None)
    for agent in ("Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)", "facebookexternalhit/1.1",
                  "Twitterbot/1.0", "WhatsApp/2.23.20.0", "Mozilla/5.0 (compatible; Discordbot/2.0)",
                  "TelegramBot (like TwitterBot)", "curl/8.5.0"):  # fmt: skip
        assert is_preview("GET", agent, None), agent
    assert not is_preview("GET", BROWSER, None)
    assert referrer_host("https://www.Reddit.com/r/news") == "reddit.com"
    assert referrer_host("android-app://com.google.android.gm/") == "com.google.android.gm"
    assert referrer_host(None) == referrer_host("  ") == ""
    assert referrer_host("https://[::1/") == OTHER
    assert referrer_host("https://" + "a" * 300 + ".example/") == OTHER
    assert referrer_host("https://exa mple.com/") == OTHER
