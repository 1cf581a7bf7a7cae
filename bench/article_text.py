"""Article text under load: pages fetched and extracted per second, and what it costs crawling, in one run.

A loopback server (a process of its own) serves summary-only feeds, each fetch bringing a new entry per feed, and
article pages: the article extraction benchmark's real pages (`../shared/data/articles`) when present, else generated
ones. A real crawl worker crawls them against a scratch database for `--seconds` with article fetching off, then on,
then off and on again (alternating, so a noisy neighbour slows both alike), the pages fetched as deployed:
`--deployment apart` (the default, as `newsagg up` runs them) by an article worker process of its own
(`newsagg worker --articles`, running in both phases, idle in the off ones) while the crawl worker leaves the article
queue alone; `--deployment inline` by the article queue's loop inside the crawl worker's process. The crawl tick runs
every second; its duration is the crawl latency the article work could steal from, with the crawl worker's event
loop's lag sampled beside it.

    python -m bench.article_text [--sources N] [--seconds S] [--concurrency N] [--deployment apart|inline]

PostgreSQL: NEWSAGG_BENCH_DATABASE_URL, else 127.0.0.1:5432 (or embedded), a scratch database dropped afterwards.
Redis: a redis-server of the run's own, stopped afterwards: nothing the run's workers write is left behind.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import json
import multiprocessing
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from arq import cron
from arq.worker import Worker
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.engine import create_engine
from app.db.migrate import upgrade
from app.extraction.models import ArticleText
from app.runtime.processes import free_port
from app.settings import Settings
from app.sources import repository as sources
from app.sources.models import FetchLog
from bench.ingest import scratch_database, scratch_redis
from jobs.crawl import crawl_tick
from jobs.worker import create_worker, shutdown

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("NEWSAGG_SHARED_DATA", ROOT.parent / "shared" / "data"))


def load_pages() -> tuple[list[bytes], str]:
    folder = SHARED / "articles" / "html"
    if folder.is_dir():
        return [gzip.decompress(p.read_bytes()) for p in sorted(folder.glob("*.html.gz"))], "benchmark"
    body = "".join(f"<p>Paragraph {k} of a generated report on the harbour wall, rebuilt after the storms.</p>"
                   for k in range(30))  # fmt: skip
    return [f"<html><body><nav>Home</nav><article><h1>Report {n}</h1>{body}</article></body></html>".encode()
            for n in range(20)], "generated"  # fmt: skip


def serve(port: int, pages: list[bytes], entries: int) -> None:
    """The publisher: /feed/<n> gives `entries` new entries per fetch (and the fetch before's), /a/<k> a page."""
    fetches: dict[str, int] = {}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            if self.path.startswith("/feed/"):
                n = fetches[self.path] = fetches.get(self.path, 0) + 1
                feed = self.path.rsplit("/", 1)[1]
                items = "".join(
                    f"<item><title>Story {feed}-{k}</title><link>http://127.0.0.1:{port}/a/{feed}-{k}</link>"
                    f"<guid>{feed}-{k}</guid><description>A short summary.</description></item>"
                    for k in range(max(0, n - 2) * entries, n * entries)
                )
                body = f'<?xml version="1.0"?><rss version="2.0"><channel><title>F{feed}</title>{items}</channel></rss>'
                self._reply(body.encode(), "application/rss+xml")
            elif self.path.startswith("/a/"):
                self._reply(pages[hash(self.path) % len(pages)], "text/html; charset=utf-8")
            else:
                self._reply(b"", "text/plain", 404)

        def _reply(self, body: bytes, content_type: str, status: int = 200) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(OSError):  # a worker stopped at the end of a phase hung up
                self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) >= 2 else (values[0] if values else 0.0)


async def loop_lag(samples: list[float], stop: asyncio.Event) -> None:
    """How late the event loop wakes a 50 ms sleep: what every job on the loop waits on top of its own work."""
    while not stop.is_set():
        started = time.perf_counter()
        await asyncio.sleep(0.05)
        samples.append(time.perf_counter() - started - 0.05)


@contextlib.contextmanager
def article_worker(settings: Settings, apart: bool) -> Iterator[None]:
    """`newsagg worker --articles` on the run's database and queue, for the length of a phase (nothing: inline)."""
    if not apart:
        yield
        return
    assert settings.database_url
    assert settings.redis_url
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEWSAGG_", "PROMETHEUS_"))} | {
        "DATABASE_URL": settings.database_url, "REDIS_URL": settings.redis_url, "NEWSAGG_HOME": str(settings.home),
        "NEWSAGG_ARTICLE_QUEUE_NAME": settings.article_queue_name, "NEWSAGG_ALLOW_LOOPBACK_SOURCES": "true",
        "NEWSAGG_POLITENESS_REQUESTS_PER_SECOND": "1000", "NEWSAGG_POLITENESS_BURST": "100",
        "NEWSAGG_ARTICLE_FETCH_CONCURRENCY": str(settings.article_fetch_concurrency), "NEWSAGG_LOG_LEVEL": "WARNING",
    }  # fmt: skip
    process = subprocess.Popen([sys.executable, "-m", "app", "worker", "--articles"], cwd=ROOT, env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)  # fmt: skip
    try:
        yield
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


async def phase(settings: Settings, seconds: float, fetching: bool, apart: bool) -> dict[str, float]:
    """Run a worker for `seconds` with article fetching on or off; its tick durations and what it did."""
    chosen = {"article_text_enabled": fetching, "worker_fetches_articles": not apart}
    phase_settings = settings.model_copy(update=chosen)
    ticks: list[float] = []

    async def timed_tick(ctx: dict[str, Any]) -> int:
        started = time.perf_counter()
        claimed = await crawl_tick(ctx)
        ticks.append(time.perf_counter() - started)
        return claimed

    worker = create_worker(phase_settings, handle_signals=False,
                           cron_jobs=[cron(timed_tick, second=set(range(60)), keep_result=0)])  # fmt: skip
    engine = create_engine(settings, pre_ping=False)
    async with engine.connect() as connection:
        pages_before = await connection.scalar(select(func.count()).select_from(ArticleText))
        fetches_before = await connection.scalar(select(func.count()).select_from(FetchLog))
    lags: list[float] = []
    stop = asyncio.Event()
    with article_worker(phase_settings, apart):
        probe = asyncio.create_task(loop_lag(lags, stop))
        task = asyncio.create_task(worker.main())
        await asyncio.sleep(seconds)
        stop.set()
        await _stopped(worker, task)
    await probe
    async with engine.connect() as connection:
        pages = (await connection.scalar(select(func.count()).select_from(ArticleText)) or 0) - (pages_before or 0)
        fetches = (await connection.scalar(select(func.count()).select_from(FetchLog)) or 0) - (fetches_before or 0)
    await engine.dispose()
    return {"ticks": len(ticks), "tick_ms_p50": 1000 * percentile(ticks, 50),
            "tick_ms_p95": 1000 * percentile(ticks, 95), "loop_lag_ms_p95": 1000 * percentile(lags, 95),
            "pages_per_second": pages / seconds, "refreshes_per_second": fetches / seconds}  # fmt: skip


async def _stopped(worker: Worker, task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    try:
        await worker.close()
    except asyncio.CancelledError:  # arq's close stops at its cancelled jobs, before its on_shutdown
        await shutdown(worker.ctx)  # which stops the article queue's loop: the next phase starts without it
        await worker.pool.aclose()


async def prepare(settings: Settings, port: int, feeds: int) -> None:
    engine = create_engine(settings, pre_ping=False)
    await upgrade(engine)
    async with AsyncSession(engine) as session, session.begin():
        for n in range(feeds):
            new = sources.NewSource(feed_url=f"http://127.0.0.1:{port}/feed/{n}", name=f"F{n}", site_url=None,
                                    category=None, language=None, authority=0.5, min_interval_s=1,
                                    max_interval_s=2)  # fmt: skip
            await sources.insert_source(session, new)
    await engine.dispose()


async def _run(redis_url: str, run: str, port: int, feeds: int, seconds: float, concurrency: int, rounds: int,
               deployment: str) -> tuple[list[dict[str, float]], list[dict[str, float]]]:  # fmt: skip
    """The phases, off and on alternating, on a scratch database and the run's own Redis: (off, on)."""
    off: list[dict[str, float]] = []
    on: list[dict[str, float]] = []
    async with scratch_database() as url:
        settings = Settings(_env_file=None, database_url=url, redis_url=redis_url,  # type: ignore[call-arg]
                            allow_loopback_sources=True, politeness_requests_per_second=1000.0,
                            politeness_burst=100, queue_name=f"newsagg-bench:{run}",
                            article_queue_name=f"newsagg-bench-articles:{run}", crawl_tick_seconds=1,
                            article_fetch_concurrency=concurrency,
                            home=Path(f"/tmp/newsagg-bench-{run}"))  # fmt: skip
        await prepare(settings, port, feeds)
        for _ in range(rounds):
            off.append(await phase(settings, seconds, fetching=False, apart=deployment == "apart"))
            on.append(await phase(settings, seconds, fetching=True, apart=deployment == "apart"))
    return off, on


def mean_of(runs: list[dict[str, float]], key: str) -> float:
    return statistics.fmean(run[key] for run in runs)


async def main(feeds: int, entries: int, seconds: float, concurrency: int, rounds: int, deployment: str
               ) -> dict[str, object]:  # fmt: skip
    pages, kind = load_pages()
    port = free_port()
    server = multiprocessing.get_context("fork").Process(target=serve, args=(port, pages, entries), daemon=True)
    server.start()
    run = uuid.uuid4().hex[:8]
    try:
        with scratch_redis() as redis_url:
            off, on = await _run(redis_url, run, port, feeds, seconds, concurrency, rounds, deployment)
    finally:
        server.terminate()
        server.join()
    summary = {key: {"off": round(mean_of(off, key), 2), "on": round(mean_of(on, key), 2)}
               for key in ("tick_ms_p50", "tick_ms_p95", "loop_lag_ms_p95", "refreshes_per_second")}  # fmt: skip
    return {
        "pages": kind, "feeds": feeds, "new_entries_per_fetch": entries, "seconds_per_phase": seconds,
        "rounds": rounds, "concurrency": concurrency, "deployment": deployment,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "pages_per_second": round(mean_of(on, "pages_per_second"), 2),
        **summary,
        "ratio_tick_p50_on_off": round(mean_of(on, "tick_ms_p50") / mean_of(off, "tick_ms_p50"), 3),
        "ratio_tick_p95_on_off": round(mean_of(on, "tick_ms_p95") / mean_of(off, "tick_ms_p95"), 3),
        "ratio_refreshes_on_off": round(mean_of(on, "refreshes_per_second") / mean_of(off, "refreshes_per_second"), 3),
    }  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sources", type=int, default=20, help="summary-only feeds (default 20)")
    parser.add_argument("--entries", type=int, default=5, help="new entries per feed fetch (default 5)")
    parser.add_argument("--seconds", type=float, default=30, help="length of each phase (default 30)")
    parser.add_argument("--rounds", type=int, default=2, help="off/on pairs (default 2)")
    parser.add_argument("--concurrency", type=int, default=Settings().article_fetch_concurrency)
    parser.add_argument("--deployment", choices=["apart", "inline"], default="apart",
                        help="article pages fetched by an article worker process of its own (default), or by the "
                        "crawl worker's process")  # fmt: skip
    args = parser.parse_args()
    result = main(args.sources, args.entries, args.seconds, args.concurrency, args.rounds, args.deployment)
    print(json.dumps(asyncio.run(result)))
