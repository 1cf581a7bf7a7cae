"""Replay and the archive under load and damage: thousands of archived bodies replayed in bounded batches, a 10 MB
body shown without being held whole, damaged bodies reported per fetch while the replay goes on, reference bodies
read once per process, and what a replay stores understood and clustered as ingest does."""

from __future__ import annotations

import io
import os
import tracemalloc
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select, text, update

from app.archive import service
from app.archive.references import Reference, ReferenceCache
from app.archive.replay import replay
from app.archive.terminal import escaped, written_out
from app.articles.models import Article
from app.articles.simhash import simhash
from app.commands.archive import summary
from app.services import Services
from app.settings import Settings
from app.sources.models import FetchLog
from app.stories.updates import STORY_UPDATED_TOPIC
from tests.archives import archive_bodies
from tests.conftest import newsagg
from tests.feeds import FeedServer, Reply, items, rss
from tests.newsroom import add_source

SINCE = datetime(2000, 1, 1, tzinfo=UTC)
STORY_UPDATES = text(f"""
    SELECT count(*) FROM outbox WHERE topic = '{STORY_UPDATED_TOPIC}'
    AND payload ->> 'story_id' = (SELECT CAST(cluster_id AS text) FROM articles WHERE id = :article)
""")


def _cli(settings: Settings, *args: str) -> Any:
    return newsagg(*args, env={**os.environ, "DATABASE_URL": str(settings.database_url)})


async def test_three_thousand_archived_bodies_replay_in_batches_with_a_correct_summary(
    services: Services, settings: Settings
) -> None:
    source_id = await add_source(services, settings, "wire")
    bodies = [rss(items(3, start=k // 100)) for k in range(3000)]  # a live feed: one new entry every 100 fetches
    await archive_bodies(services, source_id, bodies)
    batched = settings.model_copy(update={"replay_batch_fetches": 250})

    first = await replay(services.engine, batched, source_id, since=SINCE)
    second = await replay(services.engine, batched, source_id, since=SINCE)

    assert (first.fetches, first.batches, first.items, first.new, first.updated) == (3000, 12, 32, 32, 0)
    assert (first.parse_errors, first.damaged, first.clustered) == (0, 0, 32)
    assert (second.fetches, second.batches, second.new, second.updated, second.unchanged) == (3000, 12, 0, 0, 32)
    assert second.changed_nothing
    assert "nothing changed" in summary(second, source_id, SINCE)
    async with services.db() as session:
        assert await session.scalar(select(func.count()).where(Article.cluster_id.is_not(None))) == 32


async def test_a_batch_holds_no_more_bodies_than_its_byte_budget(services: Services, settings: Settings) -> None:
    source_id = await add_source(services, settings, "long")
    padding = b"<!--" + b"x" * 1_100_000 + b"-->"  # each body a little over 1 MB
    bodies = [rss(items(2, start=k)).replace(b"<channel>", b"<channel>" + padding) for k in range(12)]
    await archive_bodies(services, source_id, bodies)
    three_mb = settings.model_copy(update={"replay_batch_mb": 3})

    done = await replay(services.engine, three_mb, source_id, since=SINCE)

    assert (done.fetches, done.batches, done.items, done.new) == (12, 6, 13, 13)  # two bodies a batch
    assert done.largest_batch_bytes <= 3 * 1024 * 1024


async def test_damaged_bodies_are_reported_per_fetch_and_the_replay_goes_on(
    services: Services, settings: Settings
) -> None:
    source_id = await add_source(services, settings, "damaged")
    ids = await archive_bodies(services, source_id, [rss(items(2, start=k)) for k in range(25)])  # whole: 0, 10, 20
    async with services.engine.begin() as connection:
        await connection.execute(text("UPDATE fetch_archive SET body = substring(body for 12) WHERE id = :id"),
                                 {"id": ids[5]})  # fmt: skip
        await connection.execute(
            text("UPDATE fetch_archive SET body = '\\x28b52ffd0000'::bytea WHERE id = :id"), {"id": ids[10]}
        )  # a reference whose frame is broken: nine more go with it

    replayed = _cli(settings, "replay", "--source", str(source_id), "--since", "2000-01-01")
    shown = _cli(settings, "fetch", "show", str(ids[12]), "--body")

    assert replayed.returncode == 0, replayed.stderr
    assert "replayed 25 archived fetches" in replayed.stdout
    assert "damaged       11" in replayed.stdout
    assert "items seen    17" in replayed.stdout  # entries 0-5 (fetches 0-4), 6-10 (6-9), 20-25 (20-24)
    failed = {int(line.split()[1].rstrip(":")) for line in replayed.stdout.splitlines() if ": damaged:" in line}
    assert failed == {ids[5], *ids[10:20]}
    assert f"its reference body {ids[10]}" in replayed.stdout
    assert shown.returncode == 1
    assert "damaged" in shown.stderr


async def test_a_ten_megabyte_body_is_streamed_and_cut_at_a_megabyte_unless_asked(
    services: Services, settings: Settings
) -> None:
    source_id = await add_source(services, settings, "huge")
    words = [f"word{n}".encode() for n in range(5000)]
    huge = b" ".join(words[(n * n + 7 * n) % 5000] for n in range(1_200_000))[: 10 * 1024 * 1024]
    fetch_id, *_ = await archive_bodies(services, source_id, [huge])

    cut = _cli(settings, "fetch", "show", str(fetch_id), "--body")
    whole = _cli(settings, "fetch", "show", str(fetch_id), "--body", "--full")
    async with services.engine.connect() as connection:
        body = await service.archived_body(connection, settings, fetch_id)
    assert body is not None
    tracemalloc.start()
    streamed = sum(len(chunk) for chunk in body.chunks)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    assert len(cut.stdout) == 1024 * 1024
    assert f"body cut at 1,048,576 of {len(huge):,} bytes" in cut.stderr
    assert whole.stdout.encode() == huge
    assert "body cut" not in whole.stderr
    assert streamed == len(huge)
    assert peak < 1024 * 1024  # chunks of 64 KB, never the 10 MB body


def test_a_body_shown_on_a_terminal_cannot_drive_it() -> None:
    hostile = b"title\x1b]0;owned\x07\x1b[2J\r\nnext\tline \xc2\x9b31m caf\xc3\xa9"
    out = io.BytesIO()

    written = written_out([hostile[:10], hostile[10:]], out, limit=None, terminal=True)

    assert written == len(hostile)
    assert out.getvalue() == b"title\\x1b]0;owned\\x07\\x1b[2J\r\nnext\tline \\xc2\\x9b31m caf\xc3\xa9"
    assert escaped(b"plain text\n") == b"plain text\n"


def test_the_reference_cache_keeps_the_most_recently_used_within_its_bytes() -> None:
    cache = ReferenceCache(budget_bytes=10_000)
    made = [Reference(n, bytes(2000), None) for n in range(4)]  # type: ignore[arg-type]  # 4,000 bytes each

    for reference in made[:2]:
        cache.put(reference)
    assert cache.get(0) is made[0]  # 0 is now the most recently used
    cache.put(made[2])  # 12,000 bytes: 1, the least recently used, goes

    assert (0 in cache, 1 in cache, 2 in cache, cache.bytes) == (True, False, True, 8000)
    cache.put(Reference(9, bytes(6000), None))  # type: ignore[arg-type]  # alone over the budget: not kept
    assert 9 not in cache
    assert len(cache) == 2


async def test_a_reference_body_is_read_from_the_database_once_for_the_fetches_after_it(
    services: Services, settings: Settings, feed_server: FeedServer, monkeypatch: Any
) -> None:
    from app.ingest.fetch import new_http_client
    from app.ingest.refresh import refresh_source

    monkeypatch.setattr(service, "_cache", None)  # this process's cache, as a fresh worker has it
    source_id = await add_source(services, settings, "often")
    async with services.engine.begin() as connection:
        await connection.execute(text("UPDATE sources SET feed_url = :url WHERE id = :id"),
                                 {"url": feed_server.url("/often.xml"), "id": source_id})  # fmt: skip
    bodies = [rss(items(3, start=k)) for k in range(5)]
    async with new_http_client(settings) as http:
        for body in bodies:
            feed_server.routes["/often.xml"] = Reply(200, body, {"Content-Type": "application/rss+xml"})
            assert (await refresh_source(services.engine, http, settings, source_id)).status == "fetched"

    cache = service.reference_cache(settings)
    assert (cache.misses, cache.hits) == (1, 3)  # the first body is the reference of the four after it
    async with services.db() as session:
        fetch_ids = list(await session.scalars(select(FetchLog.id).order_by(FetchLog.id)))
    for fetch_id, body in zip(fetch_ids, bodies, strict=True):
        async with services.engine.connect() as connection:
            archived = await service.archived_body(connection, settings, fetch_id)
        assert archived is not None
        assert b"".join(archived.chunks) == body
    assert cache.misses == 1


async def test_replay_understands_what_it_changes_and_clusters_what_it_adds(
    services: Services, settings: Settings, feed_server: FeedServer, crawl: Any
) -> None:
    body = rss(items(3))
    feed_server.routes["/wire.xml"] = Reply(200, body, {"Content-Type": "application/rss+xml"})
    source_id = await add_source(services, settings, "wire")
    async with services.engine.begin() as connection:
        await connection.execute(text("UPDATE sources SET feed_url = :url WHERE id = :id"),
                                 {"url": feed_server.url("/wire.xml"), "id": source_id})  # fmt: skip
    await crawl()  # stored, understood and clustered by the worker
    async with services.db.begin() as session:  # as an older parser had read them: one missed, one misread
        missed = await session.scalar(select(Article.id).where(Article.title == "Story 0"))
        await session.execute(text("DELETE FROM articles WHERE id = :id"), {"id": missed})
        misread = await session.scalar(select(Article.id).where(Article.title == "Story 1"))
        await session.execute(update(Article).where(Article.id == misread).values(
            summary="garbled", simhash=1, language="xx", topics=[]))  # fmt: skip
        await session.execute(
            text(
                "INSERT INTO article_entities (article_id, key, name, kind, mentions, seen_at) "
                "VALUES (:id, 'per:garbled', 'Garbled', 'PER', 1, now())"
            ),
            {"id": misread},
        )
        searched_before = await session.scalar(text("SELECT count(*) FROM outbox WHERE topic = 'search'"))
        story_updates_before = await session.scalar(STORY_UPDATES, {"article": misread})

    first = await replay(services.engine, settings, source_id, since=SINCE)
    async with services.db() as session:
        story_updates_first = await session.scalar(STORY_UPDATES, {"article": misread})
    second = await replay(services.engine, settings, source_id, since=SINCE)

    assert (first.new, first.updated, first.clustered, first.understood_again, first.stories_repaired) == (
        1,
        1,
        1,
        1,
        1,
    )
    assert (second.new, second.updated, second.clustered, second.understood_again) == (0, 0, 0, 0)
    async with services.db() as session:
        fixed = (await session.execute(select(Article).where(Article.id == misread))).scalar_one()
        back = (await session.execute(select(Article).where(Article.title == "Story 0"))).scalar_one()
        entities = list(await session.scalars(text("SELECT key FROM article_entities WHERE article_id = :id"),
                                              {"id": misread}))  # fmt: skip
        searched = await session.scalar(text("SELECT count(*) FROM outbox WHERE topic = 'search'"))
        story_updates = await session.scalar(STORY_UPDATES, {"article": misread})
    assert fixed.summary == "Summary of Story 1"
    assert fixed.simhash == simhash(f"{fixed.title}\n{fixed.summary}")
    assert fixed.language == "en"
    assert "per:garbled" not in entities
    assert back.simhash is not None
    assert back.cluster_id is not None
    assert searched > searched_before
    assert story_updates_first > story_updates_before  # its story labelled again, and its subscribers told
    assert story_updates == story_updates_first  # the second replay: nothing
    assert second.changed_nothing
    async with services.db() as session:
        story = await session.scalar(text("SELECT topics FROM story_clusters WHERE id = :id"), {"id": fixed.cluster_id})
    assert story == fixed.topics  # the misread article's story labelled from its new topics


async def test_a_fetch_within_the_since_window_only(services: Services, settings: Settings) -> None:
    source_id = await add_source(services, settings, "window")
    await archive_bodies(services, source_id, [rss(items(1, start=k)) for k in range(5)])

    done = await replay(services.engine, settings, source_id, since=datetime.now(UTC) + timedelta(days=1))

    assert (done.fetches, done.batches, done.items) == (0, 0, 0)


async def test_a_fetch_after_a_damaged_reference_is_stored_whole_and_becomes_the_next_reference(
    services: Services, settings: Settings, feed_server: FeedServer
) -> None:
    from app.ingest.fetch import new_http_client
    from app.ingest.refresh import refresh_source

    source_id = await add_source(services, settings, "mended")
    async with services.engine.begin() as connection:
        await connection.execute(text("UPDATE sources SET feed_url = :url WHERE id = :id"),
                                 {"url": feed_server.url("/mended.xml"), "id": source_id})  # fmt: skip
    bodies = [rss(items(3, start=k)) for k in range(3)]
    async with new_http_client(settings) as http:
        for number, body in enumerate(bodies):
            if number == 1:  # the reference's frame damaged on disk before the second fetch (and not cached yet)
                service.forget_references()
                async with services.engine.begin() as connection:
                    await connection.execute(text("UPDATE fetch_archive SET body = '\\x00'::bytea"))
            feed_server.routes["/mended.xml"] = Reply(200, body, {"Content-Type": "application/rss+xml"})
            assert (await refresh_source(services.engine, http, settings, source_id)).status == "fetched"

    async with services.db() as session:
        rows = (await session.execute(text("SELECT id, reference_id FROM fetch_archive ORDER BY id"))).all()
    assert [r.reference_id for r in rows] == [None, None, rows[1].id]
    async with services.engine.connect() as connection:
        archived = await service.archived_body(connection, settings, rows[2].id)
    assert archived is not None
    assert b"".join(archived.chunks) == bodies[2]
