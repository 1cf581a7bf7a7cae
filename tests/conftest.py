"""Fixtures: a fresh migrated database per run, cleaned before each test; Redis; a real API server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import uvicorn
import websockets
from arq.connections import ArqRedis, create_pool
from arq.connections import RedisSettings as ArqRedisSettings
from sqlalchemy import event, make_url, text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from app.api.asgi import create_app
from app.archive.service import forget_references
from app.db.migrate import upgrade
from app.db.scratch import scratch_database
from app.models import Base
from app.queue_names import CRAWL_TICK
from app.realtime.broadcast import channel_of
from app.runtime.processes import free_port
from app.services import Services
from app.settings import Settings
from tests.servers import test_servers
from tests.watchdog import install as install_watchdog
from tests.watchdog import pytest_runtest_call  # noqa: F401  (a hook: a test running too long prints its stacks)

if TYPE_CHECKING:
    from tests.test_ingest_outages import CutProxy

REPO = Path(__file__).resolve().parents[1]
GRAPHQL_DIR = REPO / "graphql"
NODE_TOOLS = REPO / "tests" / "js"  # the reference npm clients, pinned by its package-lock.json


def pytest_configure(config: pytest.Config) -> None:
    install_watchdog()


def shared_data_dir() -> Path:
    return Path(os.environ.get("NEWSAGG_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = shared_data_dir()
    if not path.is_dir():
        pytest.skip(f"shared data not found at {path} (set NEWSAGG_SHARED_DATA to its folder)")
    return path


@pytest.fixture(scope="session")
def sample_feeds(shared_data: Path) -> Path:
    path = shared_data / "feeds" / "gesab001_headlines_sample"
    if not path.is_dir():
        pytest.skip(f"{path} is missing")
    return path


@pytest.fixture(scope="session")
def server_urls() -> Iterator[tuple[str, str]]:
    with test_servers() as urls:
        yield urls


@pytest.fixture(scope="session")
async def database_url(server_urls: tuple[str, str]) -> AsyncIterator[str]:
    """A database of this run's own, migrated to head, dropped at the end."""
    async with scratch_database(server_urls[0], "newsagg_test") as url:
        engine = create_async_engine(url)
        await upgrade(engine)
        await engine.dispose()
        yield url


@pytest.fixture
async def scratch_engine(server_urls: tuple[str, str]) -> AsyncIterator[AsyncEngine]:
    """An empty database of the test's own (for migration tests), dropped after it."""
    async with scratch_database(server_urls[0], "newsagg_scratch") as url:
        engine = create_async_engine(url)
        yield engine
        await engine.dispose()


@pytest.fixture(scope="session")
def settings(database_url: str, server_urls: tuple[str, str], tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=database_url,
        redis_url=server_urls[1],
        meili_url=None,  # PostgreSQL search whatever MEILI_URL says: the Meilisearch tests set their own index
        home=tmp_path_factory.mktemp("home"),
        allow_loopback_sources=True,
        queue_name=f"newsagg-test:{uuid.uuid4().hex[:8]}",
        article_queue_name=f"newsagg-test-articles:{uuid.uuid4().hex[:8]}",
        worker_poll_delay_seconds=0.01,
        politeness_requests_per_second=1000.0,  # tests/test_politeness.py checks the real rate
        politeness_concurrent_per_site=100,  # every test feed is on one site (127.0.0.1); test_politeness caps its own
        crawl_retry_delays_seconds=[0.05, 0.05, 0.05],
        auth_cache_seconds=0,  # tests change accounts in the database directly; tests/test_access.py covers the cache
        # metered, but no test runs out: the rate-limit tests set budgets of their own (tests/test_rate_limits.py)
        rate_limit_points=10**9,
        rate_limit_anonymous_points=10**9,
        account_attempts_per_address=10**6,
        account_attempts_per_account=10**6,
    )


@pytest.fixture(scope="session")
async def services(settings: Settings) -> AsyncIterator[Services]:
    opened = Services.open(settings)
    try:
        yield opened
    finally:
        await opened.redis.flushdb()  # the run's Redis database is left as empty as its PostgreSQL one is dropped
        await opened.close()


# All but the share links' signing key: made once per database and held by every process that read it, it outlives
# each test as it outlives every deploy (app/sharing/keys.py).
TABLES = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables if t.name != "share_link_keys")


@pytest.fixture(autouse=True)
async def clean_state(request: pytest.FixtureRequest) -> None:
    """Each test that touches the database or Redis starts from empty tables and an empty Redis database."""
    if "services" not in request.fixturenames:
        return
    services: Services = request.getfixturevalue("services")
    async with services.engine.begin() as connection:
        await connection.execute(text(f"TRUNCATE {TABLES} RESTART IDENTITY CASCADE"))
    forget_references()  # ids start again: the process's reference bodies were the last test's
    await services.redis.flushdb()


@pytest.fixture
async def postgres_proxy(settings: Settings) -> AsyncIterator[CutProxy]:
    """A way to the tests' PostgreSQL that the test cuts for an outage of its own (the server goes on serving the rest
    of the run): point a copy of the settings at it with tests/test_refresh_outage.py `through`."""
    from tests.test_ingest_outages import CutProxy

    proxy = CutProxy(make_url(settings.database_url).port or 5432)
    await proxy.start()
    yield proxy
    await proxy.cut()


@pytest.fixture
async def arq_redis(settings: Settings) -> AsyncIterator[ArqRedis]:
    assert settings.redis_url
    pool = await create_pool(ArqRedisSettings.from_dsn(settings.redis_url), default_queue_name=settings.queue_name)
    yield pool
    await pool.aclose()


@contextlib.asynccontextmanager
async def serve_api(settings: Settings, services: Services | None = None) -> AsyncIterator[str]:
    """The real ASGI app served by uvicorn on a loopback port, in the running event loop; without `services`, the
    app opens its own (its own Redis connection and broadcaster, as a separate API process has)."""
    port = free_port()
    config = uvicorn.Config(create_app(settings, services), host="127.0.0.1", port=port, log_level="warning",
                            lifespan="on", ws="websockets-sansio", proxy_headers=False)  # fmt: skip
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await task


@pytest.fixture(scope="session")
async def api_url(settings: Settings, services: Services) -> AsyncIterator[str]:
    """The real ASGI app served by uvicorn on a loopback port, in this test session's event loop."""
    async with serve_api(settings, services) as url:
        yield url


@pytest.fixture(scope="session")
def node() -> str:
    """node, for the reference npm clients in tests/js. Nothing is installed here: `.ci/run` (or
    `npm ci --prefix tests/js`) does it; without node or those packages the test skips, saying which."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is needed to run the reference npm clients (tests/js)")
    wanted = json.loads((NODE_TOOLS / "package.json").read_text())["dependencies"]
    missing = [name for name in wanted if not (NODE_TOOLS / "node_modules" / name).is_dir()]
    if missing:
        pytest.skip(f"npm packages {missing} are not installed: run `npm ci --prefix tests/js` (.ci/run does)")
    return node


def newsagg(*args: str, env: dict[str, str] | None = None, timeout: float = 120,
            check: bool = False) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """`newsagg <args>` as an operator runs it (`python -m app`), its output captured as text."""
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout, check=check)  # fmt: skip


def document(name: str) -> str:
    """The text of graphql/<name>.graphql: tests run the very documents clients copy."""
    return (GRAPHQL_DIR / f"{name}.graphql").read_text()


@contextlib.contextmanager
def count_queries(services: Services) -> Iterator[list[str]]:
    """The SQL statements sent to the database while inside: the N+1 guard."""
    with statements_sent(services.engine) as statements:
        yield statements


@contextlib.contextmanager
def statements_sent(engine: AsyncEngine) -> Iterator[list[str]]:
    """The SQL statements `engine` sent while inside."""
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    event.listen(engine.sync_engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", record)


async def statements_per_page(gql: GraphQLClient, services: Services, query: str, sizes: Iterable[int]) -> list[int]:
    """How many SQL statements `query` takes with `$n` at each size: equal counts mean no N+1."""
    counts = []
    for n in sizes:
        with count_queries(services) as statements:
            reply = await gql.post(query, {"n": n})
        assert not reply.get("errors"), reply
        counts.append(len(statements))
    return counts


class GraphQLClient:
    """GraphQL over `http` (any app: the served one or one on an ASGI transport), as the holder of `token`."""

    def __init__(self, http: httpx.AsyncClient, token: str | None = None) -> None:
        self.http = http
        self.token = token

    def as_(self, token: str | None) -> GraphQLClient:
        """The same server, with another bearer credential (None: anonymous)."""
        return GraphQLClient(self.http, token)

    async def post(self, query: str, variables: dict[str, Any] | None = None,
                   headers: dict[str, str] | None = None) -> dict[str, Any]:  # fmt: skip
        """The response body; `headers` are sent as given (an Authorization among them replaces the token's)."""
        headers = ({"Authorization": f"Bearer {self.token}"} if self.token else {}) | (headers or {})
        response = await self.http.post("/graphql", json={"query": query, "variables": variables or {}},
                                        headers=headers)  # fmt: skip
        assert response.status_code in (200, 400), response.text
        body: dict[str, Any] = response.json()
        return body

    async def run(self, name: str, **variables: Any) -> dict[str, Any]:
        """Execute graphql/<name>.graphql and return `data`, failing on any error."""
        body = await self.post(document(name), variables)
        assert not body.get("errors"), body["errors"]
        data: dict[str, Any] = body["data"]
        return data


@pytest.fixture
async def gql(api_url: str) -> AsyncIterator[GraphQLClient]:
    async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
        yield GraphQLClient(http)


async def until_drained(worker: Any) -> int:
    """Run a burst-mode worker until its queue is empty; the jobs it completed."""
    try:
        await worker.main()
    finally:
        await worker.close()
    return int(worker.jobs_complete)


@pytest.fixture
def crawl(settings: Settings, arq_redis: ArqRedis) -> Any:
    """One crawl tick and every refresh it enqueues, through arq and a real worker in burst mode."""
    from jobs.worker import create_worker

    async def run_once(tick: bool = True) -> int:
        if tick:
            await arq_redis.enqueue_job(CRAWL_TICK, _queue_name=settings.queue_name)
        return await until_drained(
            create_worker(settings, burst=True, handle_signals=False, redis_pool=arq_redis, cron_jobs=None)
        )

    return run_once


@pytest.fixture
def fetch_texts(settings: Settings, arq_redis: ArqRedis) -> Any:
    """Every article-text job queued (and their follow-ups), through arq and the article queue's worker in burst
    mode."""
    from jobs.worker import create_article_worker

    async def run_once() -> int:
        return await until_drained(create_article_worker(settings, burst=True, redis_pool=arq_redis))

    return run_once


@pytest.fixture
def feed_server() -> Iterator[Any]:
    from tests.feeds import serve

    yield from serve()


@contextlib.asynccontextmanager
async def ws_connection(api_url: str, origin: str | None = None, token: str | None = None) -> AsyncIterator[Any]:
    """A graphql-transport-ws connection (signed in with `token` over connection_init, if given), acknowledged; the
    caller sends and reads the messages itself."""
    url = api_url.replace("http://", "ws://") + "/graphql"
    headers = {"Origin": origin} if origin else {}
    init = {"type": "connection_init", "payload": {"authorization": f"Bearer {token}"} if token else {}}
    async with websockets.connect(url, subprotocols=["graphql-transport-ws"],  # type: ignore[list-item]
                                  additional_headers=headers) as ws:  # fmt: skip
        await ws.send(json.dumps(init))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        yield ws


def subscribe_message(id: str, query: str, variables: dict[str, Any] | None = None) -> str:
    """A graphql-transport-ws `subscribe` frame for operation `id`, ready to send."""
    return json.dumps({"id": id, "type": "subscribe", "payload": {"query": query, "variables": variables or {}}})


async def next_message(ws: Any, seconds: float | None = 10) -> dict[str, Any]:
    """The server's next graphql-transport-ws message that is not a ping (pings are answered), within `seconds`."""
    while True:
        message: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), seconds))
        if message["type"] != "ping":
            return message
        await ws.send(json.dumps({"type": "pong"}))


async def subscribe_ws(api_url: str, query: str, variables: dict[str, Any], origin: str | None = None
                       ) -> AsyncIterator[dict[str, Any]]:  # fmt: skip
    """A graphql-transport-ws client: yields the server's messages for one subscription (answers pings)."""
    async with ws_connection(api_url, origin) as ws:
        await ws.send(subscribe_message("1", query, variables))
        while True:
            yield await next_message(ws, seconds=None)  # the caller bounds its own wait


async def until_listening(services: Services, topic: str, *, story_id: int | None = None, count: int = 1) -> None:
    """Until `count` subscribers of this process are attached to `topic` (or one story of it) and Redis has the
    process's subscription to the topic's channel: an event published from then on reaches them."""
    channel = channel_of(services.redis, topic)
    async with asyncio.timeout(10):
        while True:
            attached = services.broadcaster.listeners(topic, story_id=story_id) >= count
            if attached and dict(await services.redis.pubsub_numsub(channel)).get(channel.encode()):
                return
            await asyncio.sleep(0.01)
