"""Where the tests' PostgreSQL and Redis come from: the configured or local servers, else embedded ones."""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from app.runtime.embedded import EmbeddedPostgres, EmbeddedRedis
from app.settings import to_asyncpg_url

LOCAL_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"
LOCAL_REDIS = "redis://127.0.0.1:6379/15"  # a database index of its own: tests flush it


def _reachable(url: str, default_port: int) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or default_port), timeout=1):
            return True
    except OSError:
        return False


@contextmanager
def test_servers() -> Iterator[tuple[str, str]]:
    """(admin PostgreSQL URL, Redis URL). NEWSAGG_TEST_DATABASE_URL / NEWSAGG_TEST_REDIS_URL win; then the
    local servers on their standard ports; otherwise embedded servers in a temporary folder."""
    with ExitStack() as stack:
        postgres = os.environ.get("NEWSAGG_TEST_DATABASE_URL") or LOCAL_POSTGRES
        redis = os.environ.get("NEWSAGG_TEST_REDIS_URL") or LOCAL_REDIS
        home = None
        if not _reachable(postgres, 5432):
            home = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="newsagg-test-")))
            embedded_pg = EmbeddedPostgres(home / "postgres")
            embedded_pg.start()
            stack.callback(embedded_pg.stop)
            postgres = embedded_pg.url()
        if not _reachable(redis, 6379):
            home = home or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="newsagg-test-")))
            embedded_redis = EmbeddedRedis(home / "redis")
            embedded_redis.start()
            stack.callback(embedded_redis.stop)
            redis = embedded_redis.url()
        yield to_asyncpg_url(postgres), redis
