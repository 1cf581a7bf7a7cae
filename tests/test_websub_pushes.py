"""A source's pushes waiting in Redis: bounded, in order, and a job enqueued by the push that finds none pending,
including the first push after a job found the list empty (none is left waiting without a job)."""

from __future__ import annotations

from arq.connections import ArqRedis
from prometheus_client import REGISTRY

from app.queue_names import INGEST_PUSH
from app.services import Services
from app.settings import Settings
from app.websub.pushes import Held, Pushed, done_with, finished, hold, next_push, receive, waiting


async def test_pushes_wait_in_order_up_to_the_bound_and_one_job_is_asked_for_at_a_time(services: Services) -> None:
    redis = services.redis
    held = [await hold(redis, 7, Pushed(f"<rss>{k}</rss>".encode(), "application/rss+xml"), most=3) for k in range(5)]
    assert held == [Held.ENQUEUE, Held.PENDING, Held.PENDING, Held.REFUSED, Held.REFUSED]
    assert await hold(redis, 8, Pushed(b"<feed/>", None), most=3) is Held.ENQUEUE  # another source: its own

    taken = []
    while (pushed := await next_push(redis, 7)) is not None:
        taken.append(pushed)
        assert await done_with(redis, 7, pushed)
        if len(taken) == 2:
            assert not await finished(redis, 7)  # one waits still: the job goes on

    assert [p.body for p in taken] == [b"<rss>0</rss>", b"<rss>1</rss>", b"<rss>2</rss>"]
    assert {p.content_type for p in taken} == {"application/rss+xml"}
    assert await finished(redis, 7)
    assert await hold(redis, 7, Pushed(b"<rss>late</rss>", None), most=3) is Held.ENQUEUE  # after it: a job anew
    assert (await waiting(redis, 7), await waiting(redis, 8)) == (1, 1)
    assert await next_push(redis, 7) == Pushed(b"<rss>late</rss>", None)


async def test_ten_thousand_pushes_for_one_topic_leave_one_job_and_a_bounded_list(
    services: Services, settings: Settings, arq_redis: ArqRedis
) -> None:
    """Given no worker running, when 10,000 verified pushes of one source arrive (as the callback receives them),
    then one ingest job is queued and `websub_pending_pushes` bodies wait; the rest are refused, each counted."""
    refused_before = REGISTRY.get_sample_value("newsagg_websub_pushes_refused_total") or 0.0
    most = settings.websub_pending_pushes

    async def enqueue(source_id: int) -> object:
        return await arq_redis.enqueue_job(INGEST_PUSH, source_id, _queue_name=settings.queue_name)

    received = [await receive(services.redis, 7, Pushed(b"<rss>%d</rss>" % k, None), most=most, enqueue=enqueue)
                for k in range(10_000)]  # fmt: skip

    assert received.count(True) == most
    assert [job.function for job in await arq_redis.queued_jobs(queue_name=settings.queue_name)] == [INGEST_PUSH]
    assert await waiting(services.redis, 7) == most
    assert await services.redis.dbsize() == 4  # the list, its mark, the queue and its one job: no key per push
    refused = REGISTRY.get_sample_value("newsagg_websub_pushes_refused_total") or 0.0
    assert refused == refused_before + 10_000 - most
