"""What archiving and replaying cost: one statement decides how a fetch's body is archived, and a reference body that
cannot be read is reported as such rather than handed on as a value."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import func, select, text

from app.archive import service
from app.archive.models import ArchivedFetch
from app.archive.replay import replay
from app.ingest.fetch import FetchedFeed
from app.services import Services
from app.settings import Settings
from app.trending.store import PREFIX
from app.trending.windows import BUCKET_SECONDS
from tests.archives import LOGS, archive_bodies
from tests.conftest import count_queries
from tests.feeds import items, rss
from tests.newsroom import add_source

SINCE = datetime(2000, 1, 1, tzinfo=UTC)


async def _keep(services: Services, settings: Settings, source_id: int, body: bytes) -> list[str]:
    """A new fetch of `body` archived (or not) by `service.keep`; the statements it counted the archive with (the
    reference body's own read, once a process, aside)."""
    fetched = FetchedFeed(200, "http://127.0.0.1:9/wire.xml", body, "application/rss+xml", None, None, 1)
    async with services.engine.begin() as connection:
        fetch = (await connection.execute(LOGS, {"source": source_id, "at": [datetime.now(UTC)]})).one()
        with count_queries(services) as statements:
            await service.keep(connection, settings, fetch.id, source_id, fetched, [])
    return [s for s in statements if "fetch_archive" in s and "count(" in s.lower()]


async def _archived(services: Services, source_id: int) -> list[int | None]:
    async with services.db() as session:
        query = select(ArchivedFetch.reference_id).where(ArchivedFetch.source_id == source_id)
        return list(await session.scalars(query.order_by(ArchivedFetch.id)))


async def test_a_fetch_is_archived_after_one_count_of_its_sources_archive(
    services: Services, settings: Settings
) -> None:
    """Given 25 bodies archived in the last minutes (whole: the 1st, 11th and 21st), when two more fetches are
    archived under a cap of 26 an hour, then each counts in the archive once: the first is compressed against the 21st,
    the second is over the cap and not kept."""
    source_id = await add_source(services, settings, "wire")
    ids = await archive_bodies(services, source_id, [rss(items(3, start=k)) for k in range(25)])
    capped = settings.model_copy(update={"fetch_archive_per_source_per_hour": 26, "fetch_archive_reference_every": 10})

    kept = await _keep(services, capped, source_id, rss(items(3, start=25)))
    skipped = await _keep(services, capped, source_id, rss(items(3, start=26)))

    assert (len(kept), len(skipped)) == (1, 1)
    archived = await _archived(services, source_id)
    assert len(archived) == 26
    assert archived[-1] == ids[20]


async def test_the_hourly_cap_counts_only_the_last_hour(services: Services, settings: Settings) -> None:
    """Given 30 bodies of which 28 were archived more than an hour ago, when three fetches are archived under a cap
    of 4 an hour, then the first two are kept and the third is not."""
    source_id = await add_source(services, settings, "hourly")
    await archive_bodies(services, source_id, [rss(items(1, start=k)) for k in range(30)])
    async with services.engine.begin() as connection:
        await connection.execute(
            text("""UPDATE fetch_archive SET fetched_at = fetched_at - interval '2 hours'
                                         WHERE id IN (SELECT id FROM fetch_archive ORDER BY id LIMIT 28)""")
        )
    capped = settings.model_copy(update={"fetch_archive_per_source_per_hour": 4})

    for k in range(3):
        await _keep(services, capped, source_id, rss(items(1, start=100 + k)))

    async with services.db() as session:
        assert await session.scalar(select(func.count()).select_from(ArchivedFetch)) == 32


async def test_a_missing_reference_makes_its_followers_unreadable_with_why(
    services: Services, settings: Settings
) -> None:
    source_id = await add_source(services, settings, "pruned")
    ids = await archive_bodies(services, source_id, [rss(items(1, start=k)) for k in range(3)], every=3)
    async with services.engine.begin() as connection:
        rows = await service.repository.archived_rows(connection, ids)
        await connection.execute(text("UPDATE fetch_archive SET body = '\\x00'::bytea WHERE id = :id"), {"id": ids[0]})
        read = [body async for body in service.archived_bodies(connection, settings, rows)]

    assert [type(body) for body in read] == [service.Readable, service.Unreadable, service.Unreadable]
    assert isinstance(read[1], service.Unreadable)
    assert read[1].reason.startswith(f"its reference body {ids[0]}: ")


async def test_a_replay_clusters_with_one_state_and_counts_arrivals_as_ingest_does(
    services: Services, settings: Settings
) -> None:
    """Given 30 archived fetches of two new entries each, when they are replayed ten fetches a batch, then the
    clustering state is read from PostgreSQL once (not once a batch), and each new article counts as an arrival."""
    source_id = await add_source(services, settings, "replayed")
    await archive_bodies(services, source_id, [rss(items(2, start=2 * k)) for k in range(30)])
    batched = settings.model_copy(update={"replay_batch_fetches": 10})

    with count_queries(services) as statements:
        done = await replay(services.engine, batched, source_id, since=SINCE, redis=services.redis)

    assert (done.batches, done.new, done.clustered) == (3, 60, 60)
    assert len([s for s in statements if "FROM story_vocabulary WHERE revision >" in s]) == 1
    arrivals = 0.0
    async for key in services.redis.scan_iter(match=f"{PREFIX}arrivals*"):
        arrivals += sum(score for _, score in await services.redis.zrange(key, 0, -1, withscores=True))
    assert arrivals == 60 * len(BUCKET_SECONDS)  # each article once in each bucket size
