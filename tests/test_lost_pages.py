"""The sweep of page jobs lost with Redis: the database first, then the queue asked about those articles only (never
read whole), and at most once in `article_sweep_seconds` however often the sweeper runs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from arq.connections import ArqRedis, RedisSettings, create_pool

from app.extraction.page_jobs import article_of, follow_up_page_job_id, page_job_id, page_job_ids
from app.runtime.embedded import EmbeddedRedis
from app.services import Services
from app.settings import Settings
from app.workers.sweep import lost_page_fetches
from jobs.sweeper import sweep_job
from tests.test_stranded_work import stored

BACKLOG = 30_000


@pytest.fixture
async def own_redis(tmp_path: Path) -> AsyncIterator[ArqRedis]:
    """A redis-server of the test's own: its command counts are this test's alone."""
    server = EmbeddedRedis(tmp_path / "redis")
    server.start()
    pool = await create_pool(RedisSettings.from_dsn(server.url()))
    try:
        yield pool
    finally:
        await pool.aclose()
        server.stop()


async def test_a_lost_page_job_is_found_behind_a_backlog_without_reading_the_queue(
    services: Services, settings: Settings, own_redis: ArqRedis
) -> None:
    """Given 1,200 articles stored a minute ago whose page jobs are queued, but one's, behind a backlog of 30,000 other
    page jobs (some of them follow-ups), when the lost pages are looked for, then that one is found, and the queue
    was asked about those articles by name: none of its members was read."""
    ids = await stored(services, 1200, ago=timedelta(minutes=1), prefix="backlog")
    lost = ids[700]
    queued = [page_job_ids(a)[a % 2] for a in ids if a != lost]  # half of them on their follow-up's id
    queued += [page_job_id(10**7 + n) for n in range(BACKLOG)]
    await own_redis.zadd(settings.article_queue_name, dict.fromkeys(queued, 1.0))

    found = await lost_page_fetches(services.engine, own_redis, settings)

    assert found == [lost]
    read = {"cmdstat_zrange", "cmdstat_zscan", "cmdstat_zrangebyscore", "cmdstat_zrevrange", "cmdstat_scan"}
    assert not read & set(await own_redis.info("commandstats"))


async def test_lost_pages_are_looked_for_once_a_period_however_often_the_sweeper_runs(
    services: Services, settings: Settings, arq_redis: ArqRedis
) -> None:
    ids = await stored(services, 3, ago=timedelta(minutes=1), prefix="cadence")
    ctx: dict[str, Any] = {"services": services, "redis": arq_redis}

    await sweep_job(ctx)
    first = await arq_redis.zrange(settings.article_queue_name, 0, -1)
    await arq_redis.delete(settings.article_queue_name)  # lost again
    await sweep_job(ctx)

    assert sorted(article_of(m.decode()) or 0 for m in first) == sorted(ids)
    assert await arq_redis.zcard(settings.article_queue_name) == 0  # not before article_sweep_seconds


def test_a_page_jobs_follow_up_takes_its_articles_other_id_in_turn() -> None:
    first, second = page_job_ids(42)
    assert (follow_up_page_job_id(42, first), follow_up_page_job_id(42, second)) == (second, first)
    assert follow_up_page_job_id(42, None) == first
    assert {article_of(first), article_of(second)} == {42}
