"""A source's held pushes when things go wrong: a push that can never be stored, two ingest jobs of one source
draining its list at once, a job that could not be enqueued, and a push whose storing meets a deadlock, a lock timeout
or a cancelled statement (tried again soon)."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections.abc import AsyncIterator
from typing import Any

import pytest
from arq.connections import ArqRedis
from redis.exceptions import ConnectionError as RedisConnectionError
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import create_async_engine

from app.articles.models import Article
from app.queue_names import INGEST_PUSH
from app.services import Services
from app.settings import Settings
from app.sources.models import FetchLog
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


@pytest.fixture(params=["22000", "42703"], ids=["data-refused", "sql-bug"])
async def refusing(services: Services, request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """PostgreSQL failing the insert of any article titled "Refused…", the same way every time: refusing its data
    (SQLSTATE 22000, a data exception), as it would a value it cannot store, or meeting SQL it cannot run (42703, an
    undefined column: a bug); gone after the test."""
    async with services.engine.begin() as connection:
        for statement in REFUSE_TITLES:
            await connection.exec_driver_sql(statement.replace("'22000'", f"'{request.param}'"))
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
    """Given a source whose list starts with 15 pushes PostgreSQL can never store (not an outage), followed
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


async def test_a_push_whose_statement_was_cancelled_is_tried_again_soon(
    services: Services, settings: Settings, arq_redis: ArqRedis, crawl: Any
) -> None:
    """Given a held push whose ingest waits on a lock its source's row is held under, when PostgreSQL cancels that
    statement (as a lock or statement timeout does), then the push is not set aside: it heads its list, its source's
    mark kept, for a deferred job of its source, which stores it."""
    source_id = await add_source(services, settings, "wire")
    await hold(services.redis, source_id, wire(0), most=100)
    ctx = {"services": services, "redis": arq_redis}
    async with services.engine.connect() as holder:
        await holder.execute(text("SELECT 1 FROM sources WHERE id = :id FOR UPDATE"), {"id": source_id})
        job = asyncio.ensure_future(ingest_push_job(ctx, source_id))
        waiter = await _waiting_on(services, int(await holder.scalar(text("SELECT pg_backend_pid()")) or 0))
        await holder.execute(text("SELECT pg_cancel_backend(:pid)"), {"pid": waiter})
        assert await job == "retry"
        await holder.rollback()

    assert await next_push(services.redis, source_id) == wire(0)
    assert await services.redis.llen(pushes.dead_key(source_id)) == 0  # type: ignore[misc]
    assert await services.redis.exists(f"{pushes.PREFIX}{source_id}:pending") == 1
    queued = await arq_redis.queued_jobs(queue_name=settings.queue_name)
    assert [(job.function, job.args, job.kwargs) for job in queued] == [(INGEST_PUSH, (source_id,), {"failures": 1})]
    await crawl(tick=False)
    assert await article_count(services) == 3
    assert await services.redis.exists(f"{pushes.PREFIX}{source_id}:pending") == 0


async def test_a_push_that_meets_a_deadlock_is_stored_once_soon_after_and_those_behind_it_too(
    services: Services, settings: Settings, arq_redis: ArqRedis, crawl: Any
) -> None:
    """Given three pushes held for a source, when the first one's ingest (its articles inserted, so their source's
    row locked against updates) waits on the source's schedule row another transaction holds, and that transaction
    then waits on the source's row (a real deadlock: PostgreSQL aborts the ingest, which waited first), then the
    worker stores the push soon after, without waiting for its source's mark to expire: every push stored once, none
    set aside, the list empty and its mark cleared."""
    source_id = await add_source(services, settings, "wire")
    for k in range(3):
        assert await receive(services.redis, source_id, wire(k), most=100, enqueue=functools.partial(
            arq_redis.enqueue_job, INGEST_PUSH, _queue_name=settings.queue_name))  # fmt: skip
    retries_before = metric("newsagg_websub_push_retries_total")
    async with services.engine.connect() as holder:
        await holder.execute(text("SELECT 1 FROM crawl_schedule WHERE source_id = :id FOR UPDATE"), {"id": source_id})
        worker = asyncio.ensure_future(crawl(tick=False))
        await _waiting_on(services, int(await holder.scalar(text("SELECT pg_backend_pid()")) or 0))
        await holder.execute(text("SELECT 1 FROM sources WHERE id = :id FOR UPDATE"), {"id": source_id})
        await holder.rollback()
    await worker

    assert await article_count(services) == 3 * 3
    async with services.db() as session:
        fetches = await session.scalar(select(func.count()).where(FetchLog.source_id == source_id))
    assert fetches == 3  # one ingest committed per push: the aborted one left nothing
    assert await pushes.waiting(services.redis, source_id) == 0
    assert await services.redis.llen(pushes.dead_key(source_id)) == 0  # type: ignore[misc]
    assert await services.redis.exists(f"{pushes.PREFIX}{source_id}:pending") == 0
    assert metric("newsagg_websub_push_retries_total") == retries_before + 1  # stored by the retry, as the log says


async def test_a_push_that_meets_a_lock_timeout_is_tried_again_soon(
    services: Services, settings: Settings, arq_redis: ArqRedis, crawl: Any
) -> None:
    """Given two pushes held for a source, when the first one's ingest, on connections that wait at most 100 ms for a
    lock (lock_timeout), finds its source's row locked, then that job ends asking for a deferred one; once the lock is
    released, the worker stores both pushes, each once."""
    source_id = await add_source(services, settings, "wire")
    for k in range(2):
        await hold(services.redis, source_id, wire(k), most=100)
    impatient = create_async_engine(
        settings.database_url or "", connect_args={"server_settings": {"lock_timeout": "100ms"}}
    )
    ctx = {"services": dataclasses.replace(services, engine=impatient), "redis": arq_redis}
    try:
        async with services.engine.connect() as holder:
            await holder.execute(text("SELECT 1 FROM sources WHERE id = :id FOR UPDATE"), {"id": source_id})
            assert await ingest_push_job(ctx, source_id) == "retry"
            await holder.rollback()
    finally:
        await impatient.dispose()
    assert await pushes.waiting(services.redis, source_id) == 2
    await crawl(tick=False)

    assert await article_count(services) == 2 * 3
    async with services.db() as session:
        assert await session.scalar(select(func.count()).where(FetchLog.source_id == source_id)) == 2
    assert await pushes.waiting(services.redis, source_id) == 0
    assert await services.redis.exists(f"{pushes.PREFIX}{source_id}:pending") == 0


async def _waiting_on(services: Services, holder: int) -> int:
    """The backend that waits on a lock `holder` holds, once there is one."""
    query = text("SELECT pid FROM pg_stat_activity WHERE :holder = ANY(pg_blocking_pids(pid)) LIMIT 1")
    for _ in range(200):
        async with services.engine.connect() as connection:
            if waiter := await connection.scalar(query, {"holder": holder}):
                return int(waiter)
        await asyncio.sleep(0.05)
    raise AssertionError("no ingest waited on the source's row")
