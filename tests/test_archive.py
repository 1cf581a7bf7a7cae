"""The raw fetch archive: a successful fetch keeps its body, `newsagg fetch show` says what it received and produced,
`newsagg replay` parses archived bodies again and stores what changed, once."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import delete, func, select, update

from app.archive import repository
from app.archive.compression import DamagedBody, compress, decompress
from app.archive.models import ArchivedFetch, FetchedArticle
from app.articles.models import Article
from app.services import Services
from app.settings import Settings
from app.sources.models import CrawlSchedule, FetchLog
from app.sources.service import SourceRequest, create_source
from tests.conftest import newsagg
from tests.feeds import FeedServer, Item, Reply, items, rss

BODY = rss(items(3))


async def _source(services: Services, settings: Settings, url: str) -> int:
    async with services.db.begin() as session:
        return (await create_source(session, settings, SourceRequest(feed_url=url, name="World Desk"))).id


async def _count(services: Services, model: Any) -> int:
    async with services.db() as session:
        return int(await session.scalar(select(func.count()).select_from(model)) or 0)


async def _crawled(services: Services, settings: Settings, feed_server: FeedServer, crawl: Any) -> tuple[int, int]:
    """A source serving BODY (ETag "v1"), crawled once: (source id, fetch id)."""

    def conditional(handler: Any) -> Reply:
        if handler.headers.get("If-None-Match") == '"v1"':
            return Reply(304, b"", {"ETag": '"v1"'})
        return Reply(200, BODY, {"ETag": '"v1"', "Content-Type": "application/rss+xml", "X-Served-By": "wire-3"})

    feed_server.routes["/wire.xml"] = conditional
    source_id = await _source(services, settings, feed_server.url("/wire.xml"))
    await crawl()
    async with services.db() as session:
        return source_id, int(await session.scalar(select(FetchLog.id)) or 0)


def _cli(settings: Settings, *args: str) -> Any:
    return newsagg(*args, env={**os.environ, "DATABASE_URL": str(settings.database_url)})


async def test_a_fetch_keeps_its_body_and_headers_and_shows_what_it_produced(
    services: Services, settings: Settings, feed_server: FeedServer, crawl: Any
) -> None:
    _, fetch_id = await _crawled(services, settings, feed_server, crawl)

    shown = _cli(settings, "fetch", "show", str(fetch_id))
    body = newsagg("fetch", "show", str(fetch_id), "--body",
                   env={**os.environ, "DATABASE_URL": str(settings.database_url)})  # fmt: skip

    assert shown.returncode == 0, shown.stderr
    assert "HTTP 200" in shown.stdout
    assert "x-served-by: wire-3" in shown.stdout
    assert "produced 3 articles:" in shown.stdout
    assert [line.split()[0] for line in shown.stdout.splitlines() if "Story" in line] == ["new"] * 3
    assert body.stdout == BODY.decode()
    async with services.db() as session:
        archived = (await session.execute(select(ArchivedFetch))).scalar_one()
    assert (archived.id, archived.raw_bytes, archived.status_code) == (fetch_id, len(BODY), 200)
    assert len(archived.body) < len(BODY)


async def test_a_not_modified_fetch_archives_nothing(
    services: Services, settings: Settings, feed_server: FeedServer, crawl: Any
) -> None:
    await _crawled(services, settings, feed_server, crawl)
    async with services.db.begin() as session:
        await session.execute(update(CrawlSchedule).values(next_crawl_at=datetime.now(UTC) - timedelta(seconds=1)))

    await crawl()

    assert (await _count(services, FetchLog), await _count(services, ArchivedFetch)) == (2, 1)
    async with services.db() as session:
        second = await session.scalar(select(func.max(FetchLog.id)))
    shown = _cli(settings, "fetch", "show", str(second))
    assert "body: not archived" in shown.stdout
    assert "produced no article" in shown.stdout


async def test_replay_stores_what_todays_parser_reads_and_a_second_replay_stores_nothing(
    services: Services, settings: Settings, feed_server: FeedServer, crawl: Any
) -> None:
    source_id, fetch_id = await _crawled(services, settings, feed_server, crawl)
    async with services.db.begin() as session:  # as an older parser had read them: one entry missed, one misread
        await session.execute(delete(Article).where(Article.title == "Story 0"))
        await session.execute(update(Article).where(Article.title == "Story 1").values(summary="garbled"))
    since = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()

    first = _cli(settings, "replay", "--source", str(source_id), "--since", since)
    second = _cli(settings, "replay", "--source", str(source_id), "--since", since)

    assert first.returncode == 0, first.stderr
    assert "replayed 1 archived fetches" in first.stdout
    assert _figures(first.stdout) == {"items seen": 3, "new articles": 1, "updated": 1, "unchanged": 1,
                                      "parse errors": 0}  # fmt: skip
    assert f"from fetch {fetch_id}: summary" in first.stdout
    assert _figures(second.stdout) == {"items seen": 3, "new articles": 0, "updated": 0, "unchanged": 3,
                                       "parse errors": 0}  # fmt: skip
    assert "\r" not in first.stdout + first.stderr  # no progress bar drawn into a pipe
    async with services.db() as session:
        summaries = set(await session.scalars(select(Article.summary)))
        changes = sorted(await session.scalars(select(FetchedArticle.change)))
    assert summaries == {"Summary of Story 0", "Summary of Story 1", "Summary of Story 2"}
    assert changes == ["new", "new", "new", "updated"]  # Story 0's first link went with it: the replay's is new


async def test_replay_compares_an_entry_edited_between_fetches_with_its_first_version(
    services: Services, settings: Settings, feed_server: FeedServer, crawl: Any
) -> None:
    source_id, _ = await _crawled(services, settings, feed_server, crawl)
    edited = items(3)
    edited[1].summary = "Corrected summary of Story 1"
    feed_server.routes["/wire.xml"] = Reply(200, rss(edited), {"Content-Type": "application/rss+xml"})
    async with services.db.begin() as session:
        await session.execute(update(CrawlSchedule).values(next_crawl_at=datetime.now(UTC) - timedelta(seconds=1)))
    await crawl()  # stores nothing: content is insert-once

    runs = [_cli(settings, "replay", "--source", str(source_id), "--since", "2000-01-01") for _ in range(2)]

    assert await _count(services, ArchivedFetch) == 2
    for replayed in runs:  # the edit neither applied nor flipped back and forth
        assert "replayed 2 archived fetches" in replayed.stdout
        assert _figures(replayed.stdout) == {"items seen": 3, "new articles": 0, "updated": 0, "unchanged": 3,
                                             "parse errors": 0}  # fmt: skip


async def test_with_the_archive_off_a_fetch_keeps_no_body_but_still_what_it_produced(
    services: Services, settings: Settings, feed_server: FeedServer
) -> None:
    from app.ingest.fetch import new_http_client
    from app.ingest.refresh import refresh_source

    feed_server.routes["/wire.xml"] = Reply(200, BODY, {"Content-Type": "application/rss+xml"})
    source_id = await _source(services, settings, feed_server.url("/wire.xml"))
    off = settings.model_copy(update={"fetch_archive": False})
    async with new_http_client(off) as http:
        outcome = await refresh_source(services.engine, http, off, source_id)

    assert (outcome.status, len(outcome.new_article_ids)) == ("fetched", 3)
    assert (await _count(services, ArchivedFetch), await _count(services, FetchedArticle)) == (0, 3)


async def test_most_bodies_are_compressed_against_a_recent_one_and_read_back_whole(
    services: Services, settings: Settings, feed_server: FeedServer
) -> None:
    from app.ingest.fetch import new_http_client
    from app.ingest.refresh import refresh_source

    source_id = await _source(services, settings, feed_server.url("/wire.xml"))
    every_third = settings.model_copy(update={"fetch_archive_reference_every": 3})
    bodies = [rss(items(3, start=k)) for k in range(5)]  # each fetch one new item, as a live feed moves
    async with new_http_client(every_third) as http:
        for body in bodies:
            feed_server.routes["/wire.xml"] = Reply(200, body, {"Content-Type": "application/rss+xml"})
            assert (await refresh_source(services.engine, http, every_third, source_id)).status == "fetched"

    async with services.db() as session:
        rows = (await session.execute(select(ArchivedFetch.id, ArchivedFetch.reference_id, func.octet_length(
            ArchivedFetch.body)).order_by(ArchivedFetch.id))).all()  # fmt: skip
    ids = [row.id for row in rows]
    assert [row.reference_id for row in rows] == [None, ids[0], ids[0], None, ids[3]]
    assert rows[1][2] < rows[0][2] / 2  # compressed against the body before, it takes far less
    for fetch_id, body in zip(ids, bodies, strict=True):
        assert _cli(settings, "fetch", "show", str(fetch_id), "--body").stdout == body.decode()
    replayed = _cli(settings, "replay", "--source", str(source_id), "--since", "2000-01-01")
    assert _figures(replayed.stdout) == {"items seen": 7, "new articles": 0, "updated": 0, "unchanged": 7,
                                         "parse errors": 0}  # fmt: skip


async def test_retention_keeps_a_reference_body_until_those_compressed_against_it_are_gone(
    services: Services, settings: Settings
) -> None:
    from tests.newsroom import add_source

    now = datetime.now(UTC)
    source_id = await add_source(services, settings, "outlet")
    async with services.db.begin() as session:
        logs = [FetchLog(source_id=source_id, fetched_at=now - timedelta(days=days), status_code=200, duration_ms=1,
                         bytes=1, items_seen=0, items_new=0) for days in (10, 1, 9, 8)]  # fmt: skip
        session.add_all(logs)
        await session.flush()
        for log, reference in zip(logs, (None, logs[0], None, logs[2]), strict=True):
            await repository.add(session, id=log.id, source_id=source_id, fetched_at=log.fetched_at, url="http://a/",
                                 status_code=200, headers={}, raw_bytes=1, body=b"",
                                 reference_id=reference.id if reference else None)  # fmt: skip
    from app.retention.service import prune

    await prune(services.engine, settings, now)
    await prune(services.engine, settings, now)  # the next hour's pass: what the first left compressed against

    async with services.db() as session:
        kept = list(await session.scalars(select(ArchivedFetch.id).order_by(ArchivedFetch.id)))
    assert kept == [logs[0].id, logs[1].id]  # 10 days old, but the 1-day-old body needs it


async def test_an_entry_listed_twice_in_one_document_is_replayed_as_ingest_stored_it(
    services: Services, settings: Settings, feed_server: FeedServer, crawl: Any
) -> None:
    link = "https://news.example.org/twice"
    twice = [Item(title="First listing", link=link, guid=link), Item(title="Second listing", link=link, guid=link)]
    feed_server.routes["/twice.xml"] = Reply(200, rss(twice), {"Content-Type": "application/rss+xml"})
    source_id = await _source(services, settings, feed_server.url("/twice.xml"))
    await crawl()

    runs = [_cli(settings, "replay", "--source", str(source_id), "--since", "2000-01-01") for _ in range(2)]

    for replayed in runs:
        assert _figures(replayed.stdout)["updated"] == 0
    async with services.db() as session:
        assert list(await session.scalars(select(Article.title))) == ["First listing"]


async def test_a_body_that_does_not_parse_is_archived_and_replay_counts_it(
    services: Services, settings: Settings, feed_server: FeedServer, crawl: Any
) -> None:
    source_id, _ = await _crawled(services, settings, feed_server, crawl)
    page = b"<html><body>Service unavailable</body></html>"
    feed_server.routes["/wire.xml"] = Reply(200, page, {"Content-Type": "text/html"})
    async with services.db.begin() as session:
        await session.execute(update(CrawlSchedule).values(next_crawl_at=datetime.now(UTC) - timedelta(seconds=1)))
    await crawl()
    async with services.db() as session:
        failed = await session.scalar(select(FetchLog.id).where(FetchLog.error_class == "parse"))

    replayed = _cli(settings, "replay", "--source", str(source_id), "--since", "2000-01-01")
    shown = _cli(settings, "fetch", "show", str(failed), "--body")

    assert shown.stdout == page.decode()
    assert _figures(replayed.stdout) == {"items seen": 3, "new articles": 0, "updated": 0, "unchanged": 3,
                                         "parse errors": 1}  # fmt: skip


async def test_replay_of_an_unknown_source_says_so(services: Services, settings: Settings) -> None:
    replayed = _cli(settings, "replay", "--source", "999", "--since", "2026-01-01")
    shown = _cli(settings, "fetch", "show", "999")

    assert (replayed.returncode, shown.returncode) == (1, 1)
    assert "no source 999" in replayed.stderr
    assert "no fetch 999" in shown.stderr


def test_a_damaged_body_fails_loudly() -> None:
    frame = compress(BODY, level=3)
    assert decompress(frame) == BODY
    with pytest.raises(DamagedBody):
        decompress(frame[:-4] + b"\0\0\0\0")  # its checksum no longer matches


def _figures(summary: str) -> dict[str, int]:
    names = ("items seen", "new articles", "updated", "unchanged", "parse errors")
    return {line[:14].strip(): int(line[14:].replace(",", "")) for line in summary.splitlines()
            if line[:14].strip() in names}  # fmt: skip
