"""The search index kept in step with the articles (I-8): every change written to the outbox by the database, the
sync delivering it, a Meilisearch that is down holding events back with back-off while searches fall back to
PostgreSQL (logged and counted), and `newsagg reindex`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import urllib.parse
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import delete, func, text, update

from app.articles.models import Article
from app.health import check_health
from app.outbox import repository as outbox
from app.outbox.models import OutboxEvent
from app.runtime.processes import free_port
from app.search.query import SearchQuery, SearchUnavailable
from app.search.service import FALLBACKS_KEY, Search
from app.search.sync import SEARCH_TOPIC, status, sync, sync_all, sync_pending
from app.services import Services
from app.settings import Settings
from tests.conftest import GraphQLClient, newsagg
from tests.newsroom import NO_MEILI, StorySpec, add_source, add_story, meili_settings


def closed_port_url() -> str:
    """A loopback URL nothing listens on: connections are refused at once, as from a Meilisearch that is down."""
    return f"http://127.0.0.1:{free_port()}"


def meili_down(settings: Settings) -> Settings:
    return settings.model_copy(update={"meili_url": closed_port_url(), "search_down_seconds": 60})


async def retry_due(services: Services) -> None:
    """Every held-back event is due now (instead of waiting out its back-off)."""
    async with services.engine.begin() as connection:
        await connection.execute(text("UPDATE outbox SET retry_at = now() - interval '1 second'"))


async def events(services: Services) -> list[OutboxEvent]:
    async with services.db() as session:
        return await outbox.events_after(session, SEARCH_TOPIC, after=None, limit=10_000)


def ids_in(rows: list[Any]) -> set[int]:
    return {i for row in rows for i in row.payload["articles"]}


async def test_every_statement_that_changes_searchable_fields_writes_one_event(services: Services,
                                                                               settings: Settings) -> None:  # fmt: skip
    outlet = await add_source(services, settings, "wire")
    _, ids = await add_story(services, StorySpec("Port strike enters second week", [outlet] * 3))
    written = await events(services)
    assert ids_in(written) == set(ids)
    async with services.db.begin() as session:  # engagement counters are not searchable: no event
        await session.execute(update(Article).where(Article.id == ids[0]).values(click_count=Article.click_count + 1))
    assert len(await events(services)) == len(written)
    async with services.db.begin() as session:
        await session.execute(update(Article).where(Article.id.in_(ids[:2])).values(topics=["business"]))
        await session.execute(delete(Article).where(Article.id == ids[2]))
    later = (await events(services))[len(written) :]
    assert [sorted(row.payload["articles"]) for row in later] == [sorted(ids[:2]), [ids[2]]]


async def test_on_postgresql_the_sync_stamps_events_and_health_shows_no_lag(gql: GraphQLClient, services: Services,
                                                                            settings: Settings) -> None:  # fmt: skip
    outlet = await add_source(services, settings, "wire")
    await add_story(services, StorySpec("Port strike enters second week", [outlet]))
    async with services.db.begin() as session:  # written 30 s ago: the lag is the oldest waiting event's age
        await session.execute(update(OutboxEvent).where(OutboxEvent.topic == SEARCH_TOPIC)
                              .values(created_at=func.now() - timedelta(seconds=30)))  # fmt: skip
    before = (await gql.run("Health"))["health"]["search"]
    assert before["backend"] == "postgres"
    assert before["pendingEvents"] >= 1
    assert 30 <= before["lagSeconds"] < 40
    assert await sync_pending(services.engine, None, settings) >= 1
    assert all(row.delivered_at is not None for row in await events(services))
    after = (await gql.run("Health"))["health"]["search"]
    assert after == {"backend": "postgres", "reachable": True, "pendingEvents": 0, "lagSeconds": 0.0, "fallbacks": 0}


async def test_an_index_that_is_down_keeps_events_with_back_off(services: Services, settings: Settings,
                                                                caplog: pytest.LogCaptureFixture) -> None:  # fmt: skip
    down = Search(meili_down(settings), services.db, services.redis)
    outlet = await add_source(services, settings, "wire")
    _, ids = await add_story(services, StorySpec("Port strike enters second week", [outlet] * 2))
    with caplog.at_level(logging.WARNING, logger="app.search.sync"):
        first = await sync(services.engine, down.meili, batch=100, retry_cap_seconds=30)
    assert first.failed
    assert "not indexed" in caplog.text
    written = await events(services)  # the insert, then each article joining its story
    assert ids_in(written) == set(ids)
    assert all(event.delivered_at is None for event in written)
    assert {event.attempts for event in written} == {1}
    assert all("unreachable" in event.last_error for event in written)
    assert all(timedelta(0) < event.retry_at - datetime.now(UTC) <= timedelta(seconds=1) for event in written)
    again = await sync(services.engine, down.meili, batch=100, retry_cap_seconds=30)
    assert (again.events, again.failed) == (0, False)  # held back: not retried before its time
    await retry_due(services)
    assert (await sync(services.engine, down.meili, batch=100, retry_cap_seconds=30)).failed
    written = await events(services)
    assert {event.attempts for event in written} == {2}
    assert all(event.retry_at - datetime.now(UTC) > timedelta(seconds=1) for event in written)  # the wait doubles
    lagging = await status(services.engine, down.meili)
    assert (lagging.backend, lagging.pending_events, lagging.most_attempts) == ("meilisearch", len(written), 2)
    assert lagging.lag_seconds > 0
    # the events are the catch-up: once the index answers, the next run after their wait sends these articles
    assert ids_in(await events(services)) == set(ids)


async def test_searches_fall_back_to_postgresql_logged_and_counted(
    services: Services, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    down = Search(meili_down(settings), services.db, services.redis)
    outlet = await add_source(services, settings, "wire")
    await add_story(services, StorySpec("Port strike enters second week", [outlet]))
    with caplog.at_level(logging.WARNING, logger="app.search.service"):
        for _ in range(2):
            found = await down.search(SearchQuery("strike"), now=datetime.now(UTC), limit=5, offset=0)
            assert found.backend == "postgres"
            assert len(found.hits) == 1
    # one warning: after a failure the process goes straight to PostgreSQL for `search_down_seconds`
    assert caplog.text.count("Meilisearch failed") == 1
    assert down.fallbacks == 2
    assert int(await services.redis.get(FALLBACKS_KEY) or 0) == 2
    health = await down.health(services.engine)
    assert (health.backend, health.reachable, health.fallbacks) == ("meilisearch", False, 2)


async def test_a_hanging_meilisearch_leaves_the_backlog_in_health(services: Services, settings: Settings) -> None:
    """A server that takes the connection and never answers: the report says Meilisearch is unreachable, within
    the check's time, and still counts the events waiting for it."""

    async def hang(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # until the client gives up
        writer.close()

    server = await asyncio.start_server(hang, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    hanging = Search(meili_settings(settings, f"http://127.0.0.1:{port}", search_timeout_seconds=3), services.db,
                     services.redis)  # fmt: skip
    outlet = await add_source(services, settings, "wire")
    await add_story(services, StorySpec("Ferry crews vote on a walkout", [outlet]))
    try:
        report = await check_health(services.engine, services.redis, hanging)
    finally:
        server.close()
    assert (report.search.backend, report.search.reachable) == ("meilisearch", False)
    assert report.search.pending_events is not None
    assert report.search.pending_events >= 1


def test_reindex_command(settings: Settings) -> None:
    env = {"PATH": "/usr/bin:/bin", "DATABASE_URL": str(settings.database_url)}
    on_postgres = newsagg("reindex", env=env)
    assert on_postgres.returncode == 0
    assert "no index to rebuild" in on_postgres.stderr
    down = newsagg("reindex", "--since", "2026-01-01", env={**env, "MEILI_URL": closed_port_url()})
    assert down.returncode == 1
    assert "reindex stopped: Meilisearch unreachable" in down.stderr
    assert newsagg("reindex", "--since", "yesterday", env=env).returncode == 2  # argparse: not a date


async def test_a_meilisearch_that_comes_back_catches_up(services: Services, settings: Settings) -> None:
    """Meilisearch behind a loopback TCP relay that is closed, then opened: the events written while it was down
    reach the index on the first run after their wait, and the search answers from Meilisearch again."""
    upstream = os.environ.get("MEILI_URL")
    if not upstream:
        pytest.skip(NO_MEILI)
    target = urllib.parse.urlsplit(upstream)
    port = free_port()
    own = meili_settings(settings, f"http://127.0.0.1:{port}", search_down_seconds=0)
    search = Search(own, services.db, services.redis)
    assert search.meili is not None
    outlet = await add_source(services, settings, "wire")
    _, ids = await add_story(services, StorySpec("Harbour pilots end their strike", [outlet] * 2))
    assert (await sync(services.engine, search.meili, batch=100, retry_cap_seconds=1)).failed

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def relay(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        server_reader, server_writer = await asyncio.open_connection(target.hostname, target.port or 80)
        await asyncio.gather(pipe(client_reader, server_writer), pipe(server_reader, client_writer))

    server = await asyncio.start_server(relay, "127.0.0.1", port)
    try:
        await retry_due(services)  # the first failure's wait, over
        assert await sync_all(services.engine, search.meili, batch=100, retry_cap_seconds=1) >= 1
        assert (await status(services.engine, search.meili)).pending_events == 0
        found = await search.search(SearchQuery("pilots"), now=datetime.now(UTC), limit=5, offset=0)
        assert (found.backend, sorted(hit.article_id for hit in found.hits)) == ("meilisearch", sorted(ids))
    finally:
        with contextlib.suppress(SearchUnavailable):  # (through the relay: a failed test leaves no index behind)
            await search.meili.drop()
        server.close()
        await server.wait_closed()
