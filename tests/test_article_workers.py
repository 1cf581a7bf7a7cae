"""Article workers of their own: `newsagg worker --articles` fetching what crawl workers leave to it, `up`'s fleet,
a page whose extraction outlasts its limit, page jobs lost with Redis swept up, and `newsagg articles fetch-text`."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psutil
import pytest
from arq.connections import ArqRedis
from sqlalchemy import select, update

from app.articles import repository as articles
from app.articles.models import Article
from app.extraction import repository as texts_repository
from app.extraction.page_jobs import article_of, follow_up_page_job_id, page_job_id
from app.extraction.pool import close_extraction_pool, extraction_pid
from app.queue_names import CRAWL_TICK
from app.runtime.fleet import Fleet, children
from app.runtime.processes import free_port
from app.services import Services
from app.settings import Settings
from app.sources.service import SourceRequest, create_source
from app.workers.models import Worker
from jobs.articles import enqueue_page_fetches
from jobs.sweeper import requeue_lost_pages
from jobs.worker import ArticleWorker, create_worker
from tests.conftest import GraphQLClient, newsagg
from tests.feeds import FeedServer, Reply
from tests.newsroom import administrator
from tests.pages import article_page, paragraphs
from tests.processes import deployment_env, running
from tests.test_article_text import fetch_one, publish, texts
from tests.test_ingest import add_source
from tests.test_stranded_work import metric, stored
from tests.test_worker_killed import poll

Run = Any


def test_up_runs_article_workers_apart_and_its_crawl_workers_leave_pages_to_them(tmp_path: Path) -> None:
    fleet = children(Fleet("127.0.0.1", 8000, apis=1, workers=2, article_workers=1), {"X": "1"}, tmp_path, [])

    assert [child.name for child in fleet] == ["api", "worker-1", "worker-2", "article-worker"]
    assert all(child.env["NEWSAGG_WORKER_FETCHES_ARTICLES"] == "false" for child in fleet[1:3])
    assert fleet[3].command[-2:] == ["worker", "--articles"]
    assert fleet[3].env == {"X": "1"}
    without = children(Fleet("127.0.0.1", 8000, apis=1, workers=1, article_workers=0), {}, tmp_path, [])
    assert [child.name for child in without] == ["api", "worker"]
    assert without[1].env["NEWSAGG_ARTICLE_TEXT_ENABLED"] == "false"  # nobody would fetch: nothing is enqueued


def test_page_job_ids_name_their_article_and_nothing_else_parses() -> None:
    assert article_of(page_job_id(42)) == 42
    assert article_of(follow_up_page_job_id(42, page_job_id(42))) == 42
    for other in ("refresh:1:2026-11-20T00:00:00+00:00", "article-text:", "article-text:x1", "article-text:-3",
                  "article-text:" + "9" * 40, "understand:sweep:1:2", ""):  # fmt: skip
        assert article_of(other) is None


async def test_an_article_worker_process_fetches_the_pages_a_crawl_worker_leaves_to_it(
    gql: GraphQLClient,
    services: Services,
    settings: Settings,
    feed_server: FeedServer,
    arq_redis: ArqRedis,
    tmp_path: Path,
) -> None:
    """Given a crawl worker told to leave article pages alone and `newsagg worker --articles` beside it, when a tick
    crawls a summary feed, then the article worker process fetches both pages, beats a heartbeat while it runs and
    signs off on SIGTERM."""
    admin = await administrator(gql, services)
    await add_source(admin, publish(feed_server, 2))
    crawling = settings.model_copy(update={"worker_fetches_articles": False})
    env = deployment_env(settings, tmp_path, NEWSAGG_ARTICLE_QUEUE_NAME=settings.article_queue_name)
    log = tmp_path / "article-worker.log"
    with running(env, "worker", "--articles", log=log) as article_worker:
        worker = create_worker(crawling, handle_signals=False, redis_pool=arq_redis, cron_jobs=None)
        crawl = asyncio.create_task(worker.main())
        try:
            await arq_redis.enqueue_job(CRAWL_TICK, _queue_name=settings.queue_name)
            await poll(lambda: _count_texts(services, 2), 90)
            assert not isinstance(worker.ctx["article_worker"], ArticleWorker)  # the crawl worker fetched none
            assert article_worker.process.pid in await _beating_pids(services)
        finally:
            crawl.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await crawl
            await worker.close()
        article_worker.process.terminate()
        assert article_worker.process.wait(30) == 0
    assert article_worker.process.pid not in await _beating_pids(services)  # signed off
    assert all(t.origin == "page" and t.word_count > 100 for t in (await texts(services)).values())
    assert "article worker" in log.read_text()


async def _count_texts(services: Services, n: int) -> bool:
    return len(await texts(services)) >= n


async def _beating_pids(services: Services) -> set[int]:
    async with services.db() as session:
        return set(await session.scalars(select(Worker.pid)))


async def test_a_page_whose_extraction_outlasts_its_limit_is_abandoned_and_the_next_page_extracts(
    services: Services, settings: Settings, feed_server: FeedServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Given a 4 MB page that takes trafilatura several seconds and a limit of 2 s (an ordinary page takes
    milliseconds, more in a niced process on a busy machine), when it is fetched between two ordinary pages, then
    it is stored as `extraction_timeout` (logged, counted), its extraction process is killed, and the next page
    extracts in a new one, which runs at the lower CPU priority."""
    endless = article_page(body=paragraphs(19_000))  # 3.8 MB: 3-7 s of extraction on this machine, loaded or not
    feed_server.routes["/endless"] = Reply(200, endless, {"Content-Type": "text/html"})
    for fine in ("/fine", "/next"):
        feed_server.routes[fine] = Reply(200, article_page(), {"Content-Type": "text/html"})
    async with services.db.begin() as session:
        await create_source(session, settings, SourceRequest(feed_url=feed_server.url("/feed.xml")))
    limited = settings.model_copy(update={"article_extraction_timeout_seconds": 2, "article_max_bytes": 4 << 20})
    before = metric("newsagg_article_extraction_abandoned_total", reason="extraction_timeout")
    try:
        assert (await fetch_one(services, limited, feed_server.url("/fine"))).status == "extracted"
        first = extraction_pid()
        assert first is not None
        with caplog.at_level(logging.WARNING):
            slow = await fetch_one(services, limited, feed_server.url("/endless"))
        assert (slow.status, slow.error_class) == ("failed", "extraction_timeout")
        assert "extraction_timeout" in caplog.text
        assert metric("newsagg_article_extraction_abandoned_total", reason="extraction_timeout") == before + 1
        assert not _alive(first)

        assert (await fetch_one(services, limited, feed_server.url("/next"))).status == "extracted"
        second = extraction_pid()
        assert second is not None
        assert second != first
        assert psutil.Process(second).nice() == min(19, os.nice(0) + limited.article_extraction_nice)
    finally:
        close_extraction_pool()
    stored = {url.rsplit("/", 1)[1]: row for url, row in (await texts(services)).items()}
    assert (stored["endless"].error_class, stored["endless"].text) == ("extraction_timeout", "")
    async with services.engine.connect() as connection:  # marked: neither the sweeper nor a backfill seeks it again
        assert await texts_repository.pages_unsought(connection, limit=10) == []


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def test_page_jobs_lost_with_redis_are_swept_up_in_bounded_batches_and_only_those(
    services: Services, settings: Settings, arq_redis: ArqRedis
) -> None:
    """Given 1,200 articles stored a minute ago with their page jobs queued, when one job is deleted, then one sweep
    enqueues it again and the next nothing; when Redis is flushed, then sweeps enqueue 1,000, then the rest but the
    pages already sought, then nothing; articles too new or too old for the sweep are left alone."""
    ids = await stored(services, 1200, ago=timedelta(minutes=1), prefix="lost")
    fresh = await stored(services, 3, ago=timedelta(0), prefix="fresh")  # their jobs may just not be enqueued yet
    old = await stored(services, 4, ago=timedelta(days=3), prefix="old")  # for `newsagg articles fetch-text`
    async with services.engine.begin() as connection:
        for article_id in ids[:10]:
            await texts_repository.save_page_text(connection, article_id, None, error_class="extraction_timeout")
    assert await enqueue_page_fetches(arq_redis, settings, ids[10:]) == 1190
    ctx: dict[str, Any] = {"services": services, "redis": arq_redis}
    before = metric("newsagg_article_pages_requeued_total")

    assert await requeue_lost_pages(ctx, services) == 0
    lost = page_job_id(ids[500])
    await arq_redis.zrem(settings.article_queue_name, lost)
    await arq_redis.delete(f"arq:job:{lost}")
    assert await requeue_lost_pages(ctx, services) == 1
    assert await requeue_lost_pages(ctx, services) == 0

    await arq_redis.flushdb()
    assert await requeue_lost_pages(ctx, services) == 1000
    assert await requeue_lost_pages(ctx, services) == 190
    assert await requeue_lost_pages(ctx, services) == 0
    queued = {article_of(m.decode()) for m in await arq_redis.zrange(settings.article_queue_name, 0, -1)}
    assert queued == set(ids[10:])
    assert not queued & {*fresh, *old}
    assert metric("newsagg_article_pages_requeued_total") == before + 1191


async def test_the_sweep_leaves_page_jobs_alone_when_pages_are_not_fetched(
    services: Services, settings: Settings, arq_redis: ArqRedis
) -> None:
    await stored(services, 5, ago=timedelta(minutes=1), prefix="off")
    off = settings.model_copy(update={"article_text_enabled": False})
    switched_off = dataclasses.replace(services, settings=off)
    assert await requeue_lost_pages({"services": switched_off, "redis": arq_redis}, switched_off) == 0
    assert await arq_redis.zcard(settings.article_queue_name) == 0


def _fetch_text(settings: Settings, home: Path, *args: str) -> tuple[int, dict[str, Any] | None, str]:
    env = deployment_env(settings, home, NEWSAGG_ARTICLE_QUEUE_NAME=settings.article_queue_name)
    done = newsagg("articles", "fetch-text", *args, env=env)
    lines = done.stdout.strip().splitlines()
    return done.returncode, json.loads(lines[-1]) if lines else None, done.stderr


async def test_fetch_text_queues_old_articles_without_text_once_and_article_workers_fetch_them(
    services: Services, settings: Settings, feed_server: FeedServer, fetch_texts: Run, tmp_path: Path
) -> None:
    """Given four articles of a week ago whose pages were never fetched (one of another source, one already sought),
    when `newsagg articles fetch-text` runs with a limit, again without, and after the article worker, then it
    queues the newest first, never twice, and nothing once their texts are stored."""
    for k in range(4):
        feed_server.routes[f"/news/{k}"] = Reply(200, article_page(f"Harbour story {k}"), {"Content-Type": "text/html"})
    async with services.db.begin() as session:
        ours = await create_source(session, settings, SourceRequest(feed_url=feed_server.url("/ours.xml")))
        theirs = await create_source(session, settings, SourceRequest(feed_url=feed_server.url("/theirs.xml")))
        rows = [articles.NewArticle(theirs.id if k == 3 else ours.id, f"n-{k}", feed_server.url(f"/news/{k}"),
                                    f"Harbour story {k}", "", None, datetime.now(UTC), k)
                for k in range(4)]  # fmt: skip
        ids = [a.id for a in await articles.insert_new(await session.connection(), rows)]
        await session.execute(update(Article).values(crawled_at=datetime.now(UTC) - timedelta(days=7)))
        await texts_repository.save_page_text(await session.connection(), ids[0], None, error_class="http_status")

    code, summary, _ = _fetch_text(settings, tmp_path, "--source", str(ours.id), "--limit", "1")
    assert code == 0
    assert summary == {"found": 1, "queued": 1, "already_queued": 0, "source": ours.id, "since": None, "limit": 1}
    code, summary, progress = _fetch_text(settings, tmp_path, "--since", "2000-01-01")
    assert (code, summary and summary["found"], summary and summary["queued"]) == (0, 3, 2)
    assert "3 articles without text" in progress
    assert _fetch_text(settings, tmp_path, "--since", (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
                       )[1] == {"found": 0, "queued": 0, "already_queued": 0, "source": None,
                                "since": f"{(datetime.now(UTC) - timedelta(days=1)).date().isoformat()}T00:00:00+00:00",
                                "limit": None}  # fmt: skip

    assert await fetch_texts() >= 3  # one job per article, and a follow-up for each politeness wait
    stored = await texts(services)
    assert sorted(row.article_id for row in stored.values() if row.text) == ids[1:]
    assert _fetch_text(settings, tmp_path)[1] == {"found": 0, "queued": 0, "already_queued": 0, "source": None,
                                                  "since": None, "limit": None}  # fmt: skip
    assert feed_server.hits.get("/news/0", 0) == 0  # sought before: not again


@pytest.mark.parametrize("args", [["--limit", "0"], ["--limit", "-5"], ["--limit", "1e9"], ["--since", "yesterday"],
                                  ["--source", "x"], ["--since", "2026-13-45"], ["--source", "9" * 30],
                                  ["--source", "٣"], ["--limit", str(2**63)]])  # fmt: skip
def test_fetch_text_refuses_bad_arguments_by_name(args: list[str], tmp_path: Path) -> None:
    done = newsagg("articles", "fetch-text", *args, env={**os.environ, "NEWSAGG_HOME": str(tmp_path)})
    assert done.returncode == 2
    assert "usage:" in done.stderr
    assert args[0] in done.stderr


async def test_up_starts_an_article_worker_that_fetches_pages_at_a_lower_priority(
    gql: GraphQLClient, services: Services, settings: Settings, feed_server: FeedServer, tmp_path: Path
) -> None:
    """`newsagg up` on the run's servers: its crawl worker is told to leave pages alone, its article worker fetches
    the pages of the feed's articles, and that worker's extraction process runs niced."""
    admin = await administrator(gql, services)
    await add_source(admin, publish(feed_server, 2))  # a database with a source: no default sources are added
    home, log = tmp_path / "home", tmp_path / "up.log"
    env = deployment_env(settings, home, NEWSAGG_ARTICLE_QUEUE_NAME=settings.article_queue_name,
                         NEWSAGG_CRAWL_TICK_SECONDS="2", NEWSAGG_LOG_FORMAT="text")  # fmt: skip
    with running(env, "up", "--port", str(free_port()), "--workers", "1", "--article-workers", "1", log=log) as up:
        await poll(lambda: _count_texts(services, 2), 120)
        pids: dict[str, int] = json.loads((home / "processes.json").read_text())
        assert set(pids) == {"supervisor", "api", "worker", "article-worker"}
        assert psutil.Process(pids["worker"]).environ()["NEWSAGG_WORKER_FETCHES_ARTICLES"] == "false"
        assert psutil.Process(pids["article-worker"]).cmdline()[-2:] == ["worker", "--articles"]
        fetching = psutil.Process(pids["article-worker"])
        (extraction,) = [p for p in fetching.children() if "spawn_main" in " ".join(p.cmdline())]  # not its tracker
        assert extraction.nice() == fetching.nice() + settings.article_extraction_nice
        up.process.terminate()
        assert up.process.wait(60) == 0, log.read_text()[-3000:]
    assert all(t.origin == "page" for t in (await texts(services)).values())
