"""`newsagg up`: one process tree for the whole system, stopped in order by Ctrl-C or SIGTERM.

Order of start: home lock → embedded PostgreSQL and Redis (only for URLs not configured) → migrations → the first
start (app/runtime/first_start.py; not in demo mode) → API processes (several behind HAProxy: app/runtime/fleet.py)
and workers → in demo mode, the demo feed server and its sources (the snapshots unpack meanwhile, from the start).
Stop runs the same list backwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import signal
import subprocess
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import FrameType

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.engine import create_engine, session_factory
from app.db.migrate import upgrade_sync
from app.runtime.children import Child, Policy, Restarted, stop_all, supervise
from app.runtime.demo import DemoFeedServer
from app.runtime.embedded import EmbeddedPostgres, EmbeddedRedis
from app.runtime.first_start import first_start
from app.runtime.fleet import Fleet
from app.runtime.fleet import children as fleet_children
from app.runtime.processes import port_is_free
from app.runtime.servers_file import clear_servers, write_servers
from app.runtime.snapshot_archive import unpacked
from app.settings import Settings
from app.sources.service import SourceRequest, create_source

log = logging.getLogger(__name__)
DEMO_INTERVAL_MINUTES = (0.05, 0.1)  # demo feeds are fetched every 3-6 s: a replayed hour passes in a few seconds
# Velocity in the demo counts the articles that joined a story in this much replayed news (72 s at 600 times faster):
# with two dozen feeds, no event gathers the 61 articles from five outlets in 30 minutes that breaking asks for, and
# 30 real minutes would hold the whole replay. The floor keeps several fetches of each feed in the window.
DEMO_VELOCITY_NEWS = timedelta(hours=12)
DEMO_VELOCITY_WINDOW_FLOOR_S = 20


class HomeInUse(RuntimeError):
    """Another `newsagg up` runs on this NEWSAGG_HOME."""


@dataclass(frozen=True)
class UpOptions:
    host: str
    port: int
    demo: Path | None = None
    speed: float = 1.0  # of the demo's replay
    apis: int = 1  # API processes: more than one run behind HAProxy on host:port
    workers: int = 1
    article_workers: int = 1  # 0: no article page is fetched
    environment: dict[str, str] = field(default_factory=dict)  # for the API and worker processes (log settings)


@contextlib.contextmanager
def home_lock(home: Path) -> Iterator[None]:
    home.mkdir(parents=True, exist_ok=True)
    with (home / "newsagg.lock").open("a") as handle:  # not "w": who tries the lock must not erase the holder's pid
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as error:
            raise HomeInUse(f"another `newsagg up` is using {home}; give this one another NEWSAGG_HOME") from error
        handle.truncate(0)
        handle.write(str(os.getpid()))
        handle.flush()
        yield


@dataclass
class EmbeddedSet:
    """The embedded servers this run started, and the URLs that reach them."""

    urls: dict[str, str] = field(default_factory=dict)
    servers: dict[str, EmbeddedPostgres | EmbeddedRedis] = field(default_factory=dict)


@contextlib.contextmanager
def embedded_servers(settings: Settings) -> Iterator[EmbeddedSet]:
    """Start what is not configured; yield the URLs to hand to children; stop them on exit."""
    started = EmbeddedSet()
    with contextlib.ExitStack() as stack:
        if not settings.database_url:
            postgres = EmbeddedPostgres(settings.home / "postgres", database=settings.embedded_database_name)
            stack.callback(postgres.stop)
            postgres.start()
            _ensure_database(postgres, settings.embedded_database_name)
            started.urls["DATABASE_URL"] = postgres.url(settings.embedded_database_name)
            started.servers["embedded PostgreSQL"] = postgres
        if not settings.redis_url:
            redis = EmbeddedRedis(settings.home / "redis")
            stack.callback(redis.stop)
            redis.start()
            started.urls["REDIS_URL"] = redis.url()
            started.servers["embedded Redis"] = redis
        yield started


def _ensure_database(postgres: EmbeddedPostgres, name: str) -> None:
    import asyncpg

    async def create() -> None:
        connection = await asyncpg.connect(f"postgresql://postgres@127.0.0.1:{postgres.port}/postgres")
        try:
            if not await connection.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name):
                await connection.execute(f'CREATE DATABASE "{name}"')
        finally:
            await connection.close()

    asyncio.run(create())


class _Stop:
    """Set by SIGTERM/SIGINT; the main loop notices and shuts everything down in order."""

    def __init__(self) -> None:
        self.requested = False
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._handle)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if not self.requested:
            log.info("received %s: stopping", signal.Signals(signum).name)
        self.requested = True


def run_up(settings: Settings, options: UpOptions) -> int:
    stop = _Stop()
    with (home_lock(settings.home), _unpacking(options.demo, settings.home, settings.demo_hours) as snapshots,
          embedded_servers(settings) as embedded, contextlib.ExitStack() as stack):  # fmt: skip
        env = {**os.environ, **embedded.urls, "NEWSAGG_HOME": str(settings.home), **options.environment}
        # the configured URLs as settings read them (postgresql:// becomes asyncpg's), else the embedded servers'
        urls = {"database_url": settings.database_url or embedded.urls.get("DATABASE_URL"),
                "redis_url": settings.redis_url or embedded.urls.get("REDIS_URL")}  # fmt: skip
        effective = settings.model_copy(update=urls)
        assert effective.database_url is not None
        upgrade_sync(effective.database_url)
        write_servers(settings.home, embedded.urls)  # the other `newsagg` commands now use these servers
        stack.callback(clear_servers, settings.home)
        if options.demo is not None:
            env.update(_demo_environment(env, options.speed))
        else:
            asyncio.run(_with_session(effective, first_start))
        article_workers = 0 if options.demo is not None else options.article_workers  # a demo fetches no pages
        if not article_workers:
            log.info("no article workers: article pages are not fetched (--article-workers)")
        fleet = Fleet(options.host, options.port, options.apis, options.workers, article_workers)
        children = fleet_children(fleet, env, settings.home, settings.rate_limit_trusted_proxies)
        policy = Policy.from_settings(settings)
        stack.callback(stop_all, children, policy.grace_s)
        for child in children:
            child.start()
        _write_children(settings.home, children)
        if snapshots is not None:
            demo = _start_demo(settings, snapshots.result(), options.speed)
            stack.callback(demo.stop)
            demo_floor = {"allow_loopback_sources": True, "crawl_interval_floor_seconds": DEMO_INTERVAL_MINUTES[0] * 60}
            asyncio.run(_register_demo_sources(effective.model_copy(update=demo_floor), demo))
        print(f"newsagg is up: GraphQL (GraphiQL, HTTP, WebSocket) at http://{options.host}:{options.port}/graphql",
              flush=True)  # fmt: skip
        # embedded Redis holds derived state only: restarted in place; embedded PostgreSQL exiting stops everything
        redis = [Restarted(name, s) for name, s in embedded.servers.items() if isinstance(s, EmbeddedRedis)]
        fatal = {name: s for name, s in embedded.servers.items() if not isinstance(s, EmbeddedRedis)}
        return supervise([*children, *redis], policy, lambda: stop.requested,
                         lambda: {name: server.exit_status() for name, server in fatal.items()},
                         started=lambda: _write_children(settings.home, children))  # fmt: skip


def _demo_environment(env: dict[str, str], speed: float) -> dict[str, str]:
    """The demo server is ours, not a publisher's: crawl it faster unless told otherwise, and often enough that the
    replay's compressed clock is seen moving; velocity measured over a stretch of news, not of real time."""
    window = max(DEMO_VELOCITY_NEWS.total_seconds() / speed, DEMO_VELOCITY_WINDOW_FLOOR_S)
    chosen = {"NEWSAGG_POLITENESS_REQUESTS_PER_SECOND": "50",
              "NEWSAGG_POLITENESS_CONCURRENT_PER_SITE": "16",  # every demo feed is on one site
              "NEWSAGG_CRAWL_TICK_SECONDS": "2", "NEWSAGG_STORY_MERGE_SECONDS": "10",
              "NEWSAGG_VELOCITY_WINDOW_SECONDS": f"{window:g}",
              # the replayed entries link to publishers' pages of years ago: a demo does not fetch them
              "NEWSAGG_ARTICLE_TEXT_ENABLED": "false"}  # fmt: skip
    return {**chosen, **{name: env[name] for name in chosen if name in env}, "NEWSAGG_ALLOW_LOOPBACK_SOURCES": "true"}


@contextlib.contextmanager
def _unpacking(demo: Path | None, home: Path, hours: float) -> Iterator[Future[Path] | None]:
    """The demo's snapshots, unpacked (tens of seconds the first time) while the servers and the children start."""
    if demo is None:
        yield None
        return
    with ThreadPoolExecutor(1, thread_name_prefix="demo-unpack") as background:
        yield background.submit(unpacked, demo, home, hours)


def _start_demo(settings: Settings, folder: Path, speed: float) -> DemoFeedServer:
    """Reuse the last demo port when free, so restarting `up --demo` finds the sources it registered."""
    port_file = settings.home / "demo.port"
    previous = int(port_file.read_text()) if port_file.exists() and port_file.read_text().isdigit() else 0
    port = previous if previous and port_is_free(previous) else 0
    server = DemoFeedServer(folder, port, speed=speed, hours=settings.demo_hours).start()
    port_file.write_text(str(server.port))
    return server


async def _with_session(settings: Settings, work: Callable[[AsyncSession, Settings], Awaitable[object]]) -> None:
    """One transaction on a short-lived engine, for the supervisor's own setup work."""
    engine = create_engine(settings)
    try:
        async with session_factory(engine).begin() as session:
            await work(session, settings)
    finally:
        await engine.dispose()


async def _register_demo_sources(settings: Settings, demo: DemoFeedServer) -> None:
    async def register(session: AsyncSession, settings: Settings) -> None:
        for feed in demo.feeds.values():
            request = SourceRequest(feed_url=demo.url(feed), name=feed.path.strip("/"), category="demo",
                                    min_interval_minutes=DEMO_INTERVAL_MINUTES[0],
                                    max_interval_minutes=DEMO_INTERVAL_MINUTES[1])  # fmt: skip
            await create_source(session, settings, request, existing_ok=True)

    await _with_session(settings, register)
    log.info("demo: %d sources registered", len(demo.feeds))


def _write_pids(home: Path, children: dict[str, subprocess.Popen[bytes]]) -> None:
    pids = {"supervisor": os.getpid(), **{name: child.pid for name, child in children.items()}}
    written = home / "processes.json.new"
    written.write_text(json.dumps(pids))
    written.replace(home / "processes.json")  # whole: a reader never sees half a file while a child restarts


def _write_children(home: Path, children: list[Child]) -> None:
    """processes.json, rewritten on each restart so `newsagg` tools find the live pids."""
    _write_pids(home, {child.name: child.process for child in children if child.process is not None})
