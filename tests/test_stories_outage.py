"""PostgreSQL gone for ten seconds under a clustering batch, the story merge pass and the vocabulary's retention, as
the worker runs them (its cron jobs, reaching PostgreSQL through a TCP proxy that can be cut): each run fails as an outage (raised for
arq to log, counted), the merge pass's mark stays where the last pass that committed left it, so the next pass merges
what changed before the outage, the worker's copy of the stories agrees with PostgreSQL after it, and vocabulary counts
are neither lost nor counted twice."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import insert, select, text
from sqlalchemy.exc import SQLAlchemyError

from app.services import Services
from app.settings import Settings
from app.stories import store
from app.stories.models import StoryVocabulary
from app.stories.service import INGEST_POLICY, cluster_articles
from app.stories.store import TOTAL, ClusteringCache
from jobs.loop import lost_server
from jobs.worker import worker_options
from tests.newsroom import two_stories_of_one_event
from tests.test_ingest_outages import CutProxy
from tests.test_refresh_outage import OUTAGE_SECONDS, through, until_waiting
from tests.test_stories_ingest import APPLE, FED, stored

Job = Callable[[dict[str, Any]], Awaitable[Any]]
MARK_HELD = "SELECT * FROM story_merge_passes FOR UPDATE"  # a merge pass records its mark there, under the lock
VOCABULARY_HELD = "LOCK TABLE story_vocabulary IN SHARE MODE"  # no row of it deleted meanwhile


def cron_job(settings: Settings, name: str) -> Job:
    """The worker's cron job `name`, as arq runs it (timed, its failures counted)."""
    crons = {job.name: job for job in worker_options(settings)["cron_jobs"]}
    return crons[f"cron:{name}"].coroutine


def job_failures(name: str) -> float:
    return REGISTRY.get_sample_value("newsagg_job_failures_total", {"job": name}) or 0.0


@pytest.fixture
async def worker(settings: Settings, postgres_proxy: CutProxy) -> AsyncIterator[Services]:
    """The worker's handles, its PostgreSQL through the proxy; a retention pass deletes 20 rows of a kind at a time."""
    opened = Services.open(through(settings, postgres_proxy).model_copy(update={"retention_article_batch": 1}))
    yield opened
    await opened.close()


async def failed_as_outage(run: Awaitable[Any]) -> None:
    with pytest.raises((SQLAlchemyError, OSError)) as failed:
        await run
    assert lost_server(failed.value) == "PostgreSQL", failed.value


async def cut_while_waiting(services: Services, proxy: CutProxy, lock: str, run: Awaitable[Any]) -> float:
    """`run` started while another transaction holds `lock`, and PostgreSQL cut once it waits for it (the lock then
    let go); when the cut was made."""
    async with services.engine.connect() as holder:
        await holder.execute(text(lock))
        running = asyncio.ensure_future(run)
        try:
            await until_waiting(services.engine, 1)
        finally:
            await proxy.cut()
            await holder.rollback()
    cut_at = time.monotonic()
    await failed_as_outage(running)
    return cut_at


async def back_after_outage(proxy: CutProxy, cut_at: float) -> None:
    await asyncio.sleep(OUTAGE_SECONDS - (time.monotonic() - cut_at))
    await proxy.start()


async def merge_mark(services: Services) -> int | None:
    async with services.engine.connect() as connection:
        return await connection.scalar(text("SELECT revision FROM story_merge_passes"))


async def vocabulary(services: Services) -> dict[str, int]:
    async with services.db() as session:
        rows = await session.execute(select(StoryVocabulary.term, StoryVocabulary.documents))
        return {term: int(documents) for term, documents in rows}


def held_stories(cache: ClusteringCache) -> dict[int, tuple[int, set[str]]]:
    return {story.id: (story.size, story.sources) for story in cache.state.stories.values()}


async def test_a_merge_pass_cut_off_by_postgresql_merges_after_it_what_changed_before(
    services: Services, settings: Settings, postgres_proxy: CutProxy, worker: Services
) -> None:
    # given a worker whose last merge pass found nothing, since which another worker made two stories of one event,
    # and this one clustered three articles of another (their vocabulary counts not yet written: a worker writes them
    # every 2,000 articles, and at each merge pass)
    cache = ClusteringCache()
    ctx = {"services": worker, "clustering": cache}
    merge = cron_job(worker.settings, "merge_stories_job")
    assert await merge(ctx) == 0
    titles = ["Plosser taper weather Fed", "Fed Plosser taper weather data"]
    fed = await two_stories_of_one_event(services, await stored(services, settings, titles), titles)
    await cluster_articles(worker.engine, await stored(services, settings, APPLE, start=10), cache)
    mark, failures = await merge_mark(services), job_failures("merge_stories_job")

    # when PostgreSQL goes away while the next pass waits to record its mark, and the pass runs again meanwhile
    cut_at = await cut_while_waiting(services, postgres_proxy, MARK_HELD, merge(ctx))
    await failed_as_outage(merge(ctx))
    assert job_failures("merge_stories_job") - failures == 2
    assert await merge_mark(services) == mark
    await back_after_outage(postgres_proxy, cut_at)

    # then the next pass merges the two stories, and writes the three articles' counts
    assert await merge(ctx) == 1
    async with services.engine.connect() as connection:
        assert await store.resolve(connection, fed[0]) == await store.resolve(connection, fed[1])
    assert (await vocabulary(services))[TOTAL] == len(APPLE)
    # and the worker's copy agrees with PostgreSQL: an article of the event joins the story the pass kept, and a new
    # copy reads the stories and counts this one holds
    [late] = await stored(services, settings, ["Fed's Plosser: taper on track despite the weather"], start=20)
    placed = await cluster_articles(worker.engine, [late], cache)
    async with services.engine.connect() as connection:
        assert placed == {late: await store.resolve(connection, fed[0])}
    fresh = ClusteringCache()
    async with fresh.locked(services.engine) as connection:
        await fresh.catch_up(connection, since=datetime.now(UTC) - INGEST_POLICY.window)
    assert held_stories(fresh) == held_stories(cache)
    assert fresh.state.documents == cache.state.documents - 1  # the late article's count is not written yet
    assert fresh.state.frequencies + cache.state.observed == +cache.state.frequencies


RARE = 50  # rare terms due: three batches of 20
KEPT = {"common": (3, 400), "lately": (1, 10), TOTAL: (2, 400)}  # term: (documents, days unseen)


async def test_a_vocabulary_retention_cut_off_by_postgresql_forgets_rare_terms_once_after_it(
    services: Services, settings: Settings, postgres_proxy: CutProxy, worker: Services
) -> None:
    # given 50 rare terms unseen for 100 days (three batches of a pass), and terms retention keeps
    now = datetime.now(UTC)
    rows = {f"typo{k}": (1, 100) for k in range(RARE)} | KEPT
    async with services.db.begin() as session:
        await session.execute(insert(StoryVocabulary), [
            {"term": term, "documents": documents, "revision": 1, "seen_at": now - timedelta(days=days)}
            for term, (documents, days) in rows.items()])  # fmt: skip
    ctx = {"services": worker}
    retention = cron_job(worker.settings, "retention_job")
    failures = job_failures("retention_job")

    # when PostgreSQL goes away as a pass is about to delete them, and a pass runs again meanwhile
    cut_at = await cut_while_waiting(services, postgres_proxy, VOCABULARY_HELD, retention(ctx))
    await failed_as_outage(retention(ctx))
    assert job_failures("retention_job") - failures == 2
    assert await vocabulary(services) == {term: documents for term, (documents, _) in rows.items()}
    await back_after_outage(postgres_proxy, cut_at)

    # then the next pass forgets each rare term once, and every other count is as it was
    assert await retention(ctx) == RARE
    assert await vocabulary(services) == {term: documents for term, (documents, _) in KEPT.items()}
    assert await retention(ctx) == 0


async def test_a_clustering_batch_cut_off_mid_save_counts_its_words_once_and_keeps_the_earlier_unwritten_ones(
    services: Services, settings: Settings, postgres_proxy: CutProxy, worker: Services
) -> None:
    # given a worker that clustered three articles (their vocabulary counts not yet written)
    cache = ClusteringCache()
    fed = await stored(services, settings, FED)
    await cluster_articles(worker.engine, fed, cache)
    apple = await stored(services, settings, APPLE, start=10)

    # when PostgreSQL goes away while the next batch, its words observed, waits to place its articles
    held = f"SELECT id FROM articles WHERE id IN ({', '.join(map(str, apple))}) FOR UPDATE"
    cut_at = await cut_while_waiting(services, postgres_proxy, held, cluster_articles(worker.engine, apple, cache))
    assert cache.state.articles_observed == len(FED)  # the failed batch's words taken back, the earlier ones kept
    await back_after_outage(postgres_proxy, cut_at)

    # then the batch is clustered again, and every article is counted once
    placed = await cluster_articles(worker.engine, apple, cache, flush_vocabulary=True)
    assert set(placed) == set(apple)
    counted = await vocabulary(services)
    assert counted[TOTAL] == len(FED) + len(APPLE)
    assert counted["appl"] == len(APPLE)  # "Apple", in its matching form, in each of the three headlines
    assert counted["plosser"] == len(FED)
