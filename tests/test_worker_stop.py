"""A worker told to stop stops, whatever a Redis call cut off by the stop raises, even when it drops the stop: a loop
that restarted on a Redis failure that came out of a cancellation outlived its supervisor for good (the worker of a
killed `newsagg up`); told while Redis is away, it shuts down once, after its jobs have ended, Redis back or not."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from pathlib import Path
from typing import Any

import redis.asyncio
from arq.connections import ArqRedis, RedisSettings, create_pool
from arq.constants import in_progress_key_prefix
from arq.worker import Worker, func
from redis.exceptions import ConnectionError as RedisConnectionError

from app.realtime.broadcast import Broadcaster
from app.redis_client import redis_client
from app.resilience.stopping import stop_if_told
from app.settings import Settings
from jobs.loop import ResilientWorker, queue_pool
from jobs.worker import ArticleWorker
from tests.test_redis_outage import own_redis


class ClosedUnderItsFeet(Worker):
    """arq's loop as it runs when its Redis connection closes the moment it is cancelled: the cancellation comes out
    as the ConnectionError of the command it cut off."""

    started = 0
    in_main = asyncio.Event()
    ended = False  # each later start returns at once: how the test ends a loop that would not stop

    async def main(self) -> None:
        ClosedUnderItsFeet.started += 1
        ClosedUnderItsFeet.in_main.set()
        if ClosedUnderItsFeet.ended:
            return
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            raise RedisConnectionError("Connection closed by server.") from None


class Resilient(ResilientWorker, ClosedUnderItsFeet):
    pass


async def nothing(ctx: dict[str, Any]) -> None:
    pass


async def test_a_stop_that_comes_out_as_a_redis_failure_still_stops_the_worker(arq_redis: ArqRedis) -> None:
    worker = Resilient(functions=[func(nothing, name="nothing")], redis_pool=arq_redis, handle_signals=False,
                       backoff_cap=0.1)  # fmt: skip
    running = asyncio.create_task(worker.main())
    await asyncio.wait_for(ClosedUnderItsFeet.in_main.wait(), 10)

    running.cancel()

    try:
        done, _ = await asyncio.wait({running}, timeout=10)  # not wait_for: it would cancel again, and wait for good
        assert done, "the loop restarted after it was told to stop"
        assert running.cancelled()
        assert ClosedUnderItsFeet.started == 1
    finally:
        ClosedUnderItsFeet.ended = True
        running.cancel()


async def test_a_redis_failure_with_no_stop_restarts_the_loop(arq_redis: ArqRedis) -> None:
    """The other side: the same failure, the task not cancelled, is an outage the loop waits out."""

    class FailsTwice(Worker):
        runs = 0

        async def main(self) -> None:
            FailsTwice.runs += 1
            if FailsTwice.runs <= 2:
                raise RedisConnectionError("Error 111 connecting to 127.0.0.1:6379.")

    class Waits(ResilientWorker, FailsTwice):
        pass

    worker = Waits(functions=[func(nothing, name="nothing")], redis_pool=arq_redis, handle_signals=False,
                   backoff_cap=0.1)  # fmt: skip
    await asyncio.wait_for(worker.main(), 10)
    assert FailsTwice.runs == 3


STOPS = 30
READER_STOPS = 300


async def test_a_worker_whose_redis_calls_are_bounded_stops_whenever_it_is_told(settings: Settings) -> None:
    """The worker's pool bounds every Redis call (queue_pool): redis-py then sends each command through
    asyncio.wait_for, which in Python 3.11 drops a cancellation that comes as the send completes. Told to stop at
    some moment of its loop (polling without pause, that moment comes often), one worker in four went on polling."""
    moments = random.Random(0)
    for k in range(STOPS):
        pool = queue_pool(settings, f"{settings.queue_name}:stops")
        worker = ResilientWorker(functions=[func(nothing, name="nothing")], redis_pool=pool, handle_signals=False,
                                 poll_delay=0, queue_name=f"{settings.queue_name}:stops")  # fmt: skip
        running = asyncio.create_task(worker.main())
        try:
            await asyncio.sleep(moments.uniform(0.005, 0.03))
            running.cancel()
            done, _ = await asyncio.wait({running}, timeout=5)
            assert done, f"stop {k + 1} of {STOPS} was lost: the worker went on polling"
        finally:
            while not running.done():  # what its supervisor would do: tell it again
                running.cancel()
                await asyncio.wait({running}, timeout=1)
            await pool.aclose()


async def test_stop_if_told_raises_only_in_a_task_told_to_stop() -> None:
    """Every loop that waits out failures (the worker's, the heartbeat's, the broadcaster's, the notification
    router's, PostgreSQL outages') asks this before it treats an error as one more outage."""
    outcomes: list[str] = []

    async def loop() -> None:
        while True:
            try:
                try:
                    await asyncio.sleep(3600)
                except asyncio.CancelledError:
                    raise OSError("connection closed") from None
            except OSError as error:
                stop_if_told(error)
                outcomes.append("waited out")

    async def failing_once() -> None:
        try:
            raise OSError("connection refused")
        except OSError as error:
            stop_if_told(error)
            outcomes.append("not told")

    await failing_once()
    task = asyncio.create_task(loop())
    await asyncio.sleep(0)
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=5)
    assert done
    assert task.cancelled()
    assert outcomes == ["not told"]


async def test_a_worker_whose_redis_is_gone_at_its_stop_still_runs_its_shutdown(tmp_path: Path) -> None:
    """`newsagg up` stops its Redis with its workers: arq's close fails on Redis before the worker's own shutdown
    (heartbeat sign-off, handles closed) runs; it runs all the same, once, and the close ends without an error."""
    shut_down: list[str] = []

    async def shutdown(ctx: dict[str, Any]) -> None:
        shut_down.append("ran")

    with own_redis(tmp_path / "redis") as server:
        pool = await create_pool(RedisSettings.from_dsn(server.url()))
        worker = ResilientWorker(functions=[func(nothing, name="nothing")], redis_pool=pool, handle_signals=False,
                                 on_shutdown=shutdown, poll_delay=0.01, backoff_cap=0.1)  # fmt: skip
        running = asyncio.create_task(worker.main())
        await asyncio.sleep(0.3)
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
    await asyncio.wait_for(worker.close(), 20)  # Redis is stopped now
    assert shut_down == ["ran"]


OUTAGE_SECONDS = 10


async def test_a_worker_told_to_stop_while_redis_is_down_ends_its_jobs_then_shuts_down_once_across_a_restart(
    tmp_path: Path,
) -> None:
    """Given a worker running two jobs, one of which takes a while to stop (a rollback, a response to close), when Redis
    goes away (a Redis that keeps its data: it comes back with what it held), the worker is told to stop and Redis is
    back on the same port within ten seconds, then the worker's loop ends at once, its close waits for both jobs to end
    before it shuts down, once, and leaves no task running; the restarted Redis holds no in-progress mark but those
    that expire as arq's do (the job whose end could not be recorded runs again once its mark expires)."""
    shut_down: list[str] = []
    started = {"quick": asyncio.Event(), "slow": asyncio.Event()}

    async def quick(ctx: dict[str, Any]) -> None:
        started["quick"].set()
        await asyncio.sleep(3600)

    async def slow(ctx: dict[str, Any]) -> None:
        started["slow"].set()
        try:
            await asyncio.sleep(3600)
        finally:  # its stop outlasts the outage
            await asyncio.sleep(OUTAGE_SECONDS + 1)

    async def shutdown(ctx: dict[str, Any]) -> None:
        shut_down.append("ran")

    with own_redis(tmp_path / "redis") as server:
        direct = redis.asyncio.Redis(host="127.0.0.1", port=server.port)
        pool = await create_pool(RedisSettings.from_dsn(server.url()))
        for name in started:
            await pool.enqueue_job(name, _job_id=name)
        worker = ResilientWorker(functions=[func(quick, name="quick"), func(slow, name="slow")], redis_pool=pool,
                                 handle_signals=False, on_shutdown=shutdown, poll_delay=0.01,
                                 backoff_cap=1)  # fmt: skip
        others = asyncio.all_tasks()
        worker.main_task = running = asyncio.create_task(worker.main())
        closing: asyncio.Task[None] | None = None
        try:
            async with asyncio.timeout(10):
                await asyncio.gather(*(event.wait() for event in started.values()))
            await direct.save()  # what a Redis that persists would come back with

            # when Redis goes away, the worker is told to stop while it is away, and Redis is back within 10 s
            server.stop()
            stopped_at = time.monotonic()
            await asyncio.sleep(1)
            closing = asyncio.create_task(worker.close())  # as `newsagg worker` on SIGTERM: jobs and loop cancelled
            done, _ = await asyncio.wait({running}, timeout=10)
            assert done, "the loop went on after it was told to stop"
            assert not closing.done(), "closed while a job was still stopping"
            await asyncio.sleep(OUTAGE_SECONDS - (time.monotonic() - stopped_at))
            server.start()

            # then the close ends once both jobs have, after which the worker shut down, once, leaving no task
            async with asyncio.timeout(30):
                await closing
            assert shut_down == ["ran"]
            assert all(task.done() for task in worker.tasks.values())
            assert asyncio.all_tasks() - others - {asyncio.current_task()} == set()
            # and the restarted Redis holds the quick job's mark, to expire as arq's do, not the slow one's: its end
            # was recorded once Redis was back
            marks = {key: await direct.pttl(key) async for key in direct.scan_iter(f"{in_progress_key_prefix}*")}
            assert list(marks) == [f"{in_progress_key_prefix}quick".encode()], marks
            assert 0 < marks[f"{in_progress_key_prefix}quick".encode()] <= worker.in_progress_timeout_s * 1000
            assert sorted(await direct.zrange(worker.queue_name, 0, -1)) == [b"quick", b"slow"]  # both run again
        finally:
            for task in (running, closing):
                if task is not None:
                    task.cancel()
            await direct.aclose()


async def test_an_article_worker_stops_after_its_jobs_have_ended_not_before(settings: Settings) -> None:
    """The crawl worker's own article loop (jobs/worker.py ArticleWorker): its jobs are told to stop and waited for
    before its pool closes and the process's handles close after it; a job that was only told went on ending on its
    own (its end recorded on a closed pool, its last writes on handles already closed)."""
    queue, started, ended = f"{settings.queue_name}:article-stop", asyncio.Event(), []

    async def fetching(ctx: dict[str, Any]) -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        finally:
            await asyncio.sleep(0.3)  # what a job does as it stops: its last write
            ended.append(True)

    pool = queue_pool(settings, queue)
    articles = ArticleWorker(ResilientWorker(functions=[func(fetching, name="fetching")], redis_pool=pool,
                                             handle_signals=False, poll_delay=0.05, queue_name=queue))  # fmt: skip
    enqueuer = queue_pool(settings, queue)
    try:
        await enqueuer.enqueue_job("fetching")
        await asyncio.wait_for(started.wait(), 10)
        await asyncio.wait_for(articles.stop(), 10)
        assert ended == [True], "the article worker stopped before its job had ended"
    finally:
        await enqueuer.aclose()


async def test_the_broadcast_reader_stops_whenever_it_is_told(settings: Settings) -> None:
    """The API's pub/sub reader (app/realtime/broadcast.py) PINGs a quiet Redis through bounded calls, which Python
    3.11's wait_for may drop a cancellation from, as the worker's polls do: a reader that went on listening held the
    API's shutdown (close waits for it) for good. Rarer than the worker's: about one stop in 150 to 600 was lost."""
    moments = random.Random(1)
    for k in range(READER_STOPS):
        redis = redis_client(settings)
        broadcaster = Broadcaster(redis, liveness_seconds=0.002)  # quiet: a PING each time it waits that long
        try:
            async with broadcaster.listen("stops"):
                await asyncio.sleep(moments.uniform(0.005, 0.03))
                closing = asyncio.create_task(broadcaster.close())
                done, _ = await asyncio.wait({closing}, timeout=5)
                assert done, f"stop {k + 1} of {READER_STOPS} was lost: the reader went on listening"
        finally:
            reader = broadcaster._reader
            while reader is not None and not reader.done():
                reader.cancel()
                await asyncio.wait({reader}, timeout=1)
            await redis.aclose()
