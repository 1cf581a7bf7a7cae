"""A source's held pushes when things go wrong: a push that can never be stored, two ingest jobs of one source
draining its list at once, and a job that could not be enqueued."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from arq.connections import ArqRedis
from redis.exceptions import ConnectionError as RedisConnectionError
from sqlalchemy import func, select, text
from sqlalchemy.exc import DBAPIError

from app.articles.models import Article
from app.queue_names import INGEST_PUSH
from app.services import Services
from app.settings import Settings
from app.websub import pushes
from app.websub.pushes import Pushed, hold, next_push, receive
from jobs.crawl import ingest_push_job
from tests.feeds import Item, rss
from tests.newsroom import add_source
from tests.test_stranded_work import metric

RSS = "application/rss+xml"
REFUSE_TITLES = (
    """
CREATE OR REPLACE FUNCTION refuse_titles() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.title LIKE 'Refused%' THEN RAISE EXCEPTION 'title refused' USING ERRCODE = '22000'; END IF;
  RETURN NEW;
END $$""",
    "CREATE TRIGGER refuse_titles BEFORE INSERT ON articles FOR EACH ROW EXECUTE FUNCTION refuse_titles()",
)


@pytest.fixture
async def refusing(services: Services) -> AsyncIterator[None]:
    """PostgreSQL refusing the data of any article titled "Refused…" (SQLSTATE 22000, a data exception), as it
    would a value it cannot store; gone after the test."""
    async with services.engine.begin() as connection:
        for statement in REFUSE_TITLES:
            await connection.exec_driver_sql(statement)
    yield
    async with services.engine.begin() as connection:
        await connection.exec_driver_sql("DROP TRIGGER refuse_titles ON articles")
        await connection.exec_driver_sql("DROP FUNCTION refuse_titles()")


def wire(k: int, per: int = 3) -> Pushed:
    return Pushed(rss([Item(f"Wire {k}.{j}", f"https://wire.example/{k}/{j}", f"w{k}.{j}") for j in range(per)]), RSS)


async def article_count(services: Services) -> int:
    async with services.db() as session:
        return int(await session.scalar(select(func.count()).select_from(Article)) or 0)


async def test_pushes_that_cannot_be_stored_are_set_aside_and_those_behind_them_stored(
    services: Services, settings: Settings, arq_redis: ArqRedis, crawl: Any, refusing: None
) -> None:
    """Given a source whose list starts with 15 pushes whose data PostgreSQL refuses (not an outage), followed
    by 20 good ones, when its ingest jobs run, then the good ones are stored, the list is empty and its mark cleared,
    the last 10 failures wait in the source's dead list (counted), and the next push enqueues a job again."""
    source_id = await add_source(services, settings, "wire")
    dead_before = metric("newsagg_websub_pushes_dead_total")
    bad = [Pushed(rss([Item(f"Refused {k}", f"https://wire.example/refused/{k}", f"r{k}")]), RSS) for k in range(15)]

    async def enqueue(source: int) -> object:
        return await arq_redis.enqueue_job(INGEST_PUSH, source, _queue_name=settings.queue_name)

    for pushed in [*bad, *(wire(k) for k in range(20))]:
        assert await receive(services.redis, source_id, pushed, most=100, enqueue=enqueue)
    await crawl(tick=False)

    assert await article_count(services) == 20 * 3
    assert await pushes.waiting(services.redis, source_id) == 0
    dead = await services.redis.lrange(pushes.dead_key(source_id), 0, -1)  # type: ignore[misc]
    assert [entry.partition(b"\n")[2] for entry in dead] == [p.body for p in bad[-pushes.DEAD_MOST :]]
    assert metric("newsagg_websub_pushes_dead_total") == dead_before + 15
    assert await hold(services.redis, source_id, wire(99), most=100) is pushes.Held.ENQUEUE


async def test_two_jobs_of_one_source_store_every_push(
    services: Services, settings: Settings, arq_redis: ArqRedis
) -> None:
    """Given 40 pushes held for a source, when two ingest jobs of that source (the first one's mark having expired
    under a backlog) drain its list at the same time, then every push is stored and none is left behind."""
    source_id = await add_source(services, settings, "wire")
    for k in range(40):
        await hold(services.redis, source_id, wire(k, per=1), most=100)
    ctx = {"services": services, "redis": arq_redis}

    await asyncio.gather(ingest_push_job(ctx, source_id), ingest_push_job(ctx, source_id))
    while await pushes.waiting(services.redis, source_id):  # the follow-up jobs they enqueued, run here
        await ingest_push_job(ctx, source_id)

    assert await article_count(services) == 40


async def test_a_push_stored_by_another_job_first_is_not_taken_twice(services: Services) -> None:
    """Given two jobs that read the same oldest push, when both are done with it, then only it leaves the list."""
    for k in range(2):
        await hold(services.redis, 7, wire(k), most=100)
    first, second = await next_push(services.redis, 7), await next_push(services.redis, 7)
    assert first is not None
    assert second == first

    assert await pushes.done_with(services.redis, 7, first)
    assert not await pushes.done_with(services.redis, 7, second)
    assert await next_push(services.redis, 7) == wire(1)


async def test_a_push_whose_job_could_not_be_enqueued_leaves_no_mark(
    services: Services, settings: Settings, arq_redis: ArqRedis
) -> None:
    """Given a push whose job's enqueue fails (the queue's Redis refusing connections), then the push is answered
    with an error and no job is marked pending: the hub's retry enqueues one."""
    gone = ArqRedis.from_url("redis://127.0.0.1:1/0")  # nothing listens on port 1

    async def enqueue(source: int, queue: ArqRedis) -> object:
        return await queue.enqueue_job(INGEST_PUSH, source, _queue_name=settings.queue_name)

    with pytest.raises(RedisConnectionError):
        await receive(services.redis, 7, wire(0), most=100, enqueue=lambda source: enqueue(source, gone))
    await gone.aclose()
    assert await services.redis.exists(f"{pushes.PREFIX}7:pending") == 0

    assert await receive(services.redis, 7, wire(0), most=100, enqueue=lambda source: enqueue(source, arq_redis))
    assert [job.function for job in await arq_redis.queued_jobs(queue_name=settings.queue_name)] == [INGEST_PUSH]


async def test_a_push_whose_statement_was_cancelled_waits_for_the_jobs_retry(
    services: Services, settings: Settings, arq_redis: ArqRedis
) -> None:
    """Given a held push whose ingest waits on a lock its source's row is held under, when PostgreSQL cancels that
    statement (as a lock or statement timeout does), then the push is not set aside: it heads its list for the job's
    retry, which stores it."""
    source_id = await add_source(services, settings, "wire")
    await hold(services.redis, source_id, wire(0), most=100)
    ctx = {"services": services, "redis": arq_redis}
    async with services.engine.connect() as holder:
        await holder.execute(text("SELECT 1 FROM sources WHERE id = :id FOR UPDATE"), {"id": source_id})
        job = asyncio.ensure_future(ingest_push_job(ctx, source_id))
        waiter = await _waiting_on(services, int(await holder.scalar(text("SELECT pg_backend_pid()")) or 0))
        await holder.execute(text("SELECT pg_cancel_backend(:pid)"), {"pid": waiter})
        with pytest.raises(DBAPIError, match="cancel"):
            await job
        await holder.rollback()

    assert await next_push(services.redis, source_id) == wire(0)
    assert await services.redis.llen(pushes.dead_key(source_id)) == 0  # type: ignore[misc]
    await ingest_push_job(ctx, source_id)
    assert await article_count(services) == 3


async def _waiting_on(services: Services, holder: int) -> int:
    """The backend that waits on a lock `holder` holds, once there is one."""
    query = text("SELECT pid FROM pg_stat_activity WHERE :holder = ANY(pg_blocking_pids(pid)) LIMIT 1")
    for _ in range(200):
        async with services.engine.connect() as connection:
            if waiter := await connection.scalar(query, {"holder": holder}):
                return int(waiter)
        await asyncio.sleep(0.05)
    raise AssertionError("no ingest waited on the source's row")
