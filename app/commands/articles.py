"""Commands that pass over the stored articles with their progress on stderr: `reindex` (to Meilisearch),
`entities backfill`, `topics relabel` and `articles fetch-text`."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from typing import TYPE_CHECKING

from app.commands import database
from app.settings import Settings

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from contextlib import AbstractAsyncContextManager

    from sqlalchemy.ext.asyncio import AsyncEngine

    from app.extraction.backfill import Backfilled, Enqueue

    Progress = Callable[[int], None]  # told how many articles a pass has read so far


def progress_bar(done: int, total: int, width: int = 40) -> None:
    """A one-line progress bar on stderr (articles done of all, percent), redrawn in place."""
    filled = width * done // total if total else width
    end = "\n" if done >= total else ""
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done:,}/{total:,} "
                     f"({100 * done // max(total, 1)}%){end}")  # fmt: skip
    sys.stderr.flush()


def backfill_entities(settings: Settings) -> int:
    from app.entities.backfill import backfill

    async def run(engine: AsyncEngine, progress: Progress) -> str:
        done = await backfill(engine, progress=progress)
        return f"{done} articles without entities read; those naming any now have them"

    return _over_articles(settings, run)


def relabel_topics(settings: Settings) -> int:
    from app.articles.relabel import relabel

    async def run(engine: AsyncEngine, progress: Progress) -> str:
        done = await relabel(engine, progress=progress)
        return f"{done.read} articles read, {done.changed} labelled anew, {done.stories} stories counted again"

    return _over_articles(settings, run)


def _over_articles(settings: Settings, work: Callable[[AsyncEngine, Progress], Awaitable[str]]) -> int:
    """A pass over the stored articles on the migrated database: how many it has read as it goes, then its summary."""

    async def run(engine: AsyncEngine) -> int:
        summary = await work(engine, lambda n: print(f"\r{n:,} articles read", end="", file=sys.stderr))
        print(f"\n{summary}")
        return 0

    return database.with_database(settings, run)


def reindex(settings: Settings, since: datetime | None) -> int:
    from app.search.query import SearchUnavailable
    from app.search.service import meili_index
    from app.search.sync import reindex as send_all

    index = meili_index(settings)
    if index is None:
        print("MEILI_URL is not set: search runs on PostgreSQL, whose search vector the database keeps itself; "
              "there is no index to rebuild", file=sys.stderr)  # fmt: skip
        return 0

    async def run(engine: AsyncEngine) -> int:
        try:
            sent = await send_all(engine, index, since=since, batch=settings.search_sync_batch, progress=progress_bar)
        except SearchUnavailable as error:
            print(f"\nreindex stopped: {error}", file=sys.stderr)
            return 1
        print(f"{sent} articles sent to the Meilisearch index {settings.meili_index!r}")
        return 0

    return database.with_database(settings, run)


def fetch_text(settings: Settings, source_id: int | None, since: datetime | None, limit: int | None,
               queue: Callable[[Settings], AbstractAsyncContextManager[Enqueue]]) -> int:  # fmt: skip
    """`newsagg articles fetch-text`: page jobs for the articles without text, through `queue` (the article queue,
    on REDIS_URL or the running `newsagg up`'s Redis); a JSON summary as the last line."""
    from redis.exceptions import RedisError

    from app.extraction.backfill import backfill
    from app.runtime.servers_file import running_redis_url

    if not settings.article_text_enabled:
        print("NEWSAGG_ARTICLE_TEXT_ENABLED is false: the page jobs would skip every article", file=sys.stderr)
        return 2
    redis_url = settings.redis_url or running_redis_url(settings.home)
    if redis_url is None:
        print("no Redis to queue on: set REDIS_URL, or run this while `newsagg up` runs", file=sys.stderr)
        return 2
    chosen = {"source": source_id, "since": since.isoformat() if since else None, "limit": limit}

    def progress(done: Backfilled) -> None:
        print(f"\r{done.found:,} articles without text, {done.queued:,} page jobs queued", end="", file=sys.stderr)

    async def run(engine: AsyncEngine) -> int:
        try:
            async with queue(settings.model_copy(update={"redis_url": redis_url})) as enqueue:
                done = await backfill(engine, enqueue, source_id=source_id, since=since, limit=limit,
                                      progress=progress)  # fmt: skip
        except (RedisError, OSError) as error:
            print(f"\nRedis unreachable ({type(error).__name__}: {error}); what was queued stays queued, run the "
                  "command again to queue the rest", file=sys.stderr)  # fmt: skip
            return 1
        print(f"\n{done.queued} page jobs queued for article workers (`newsagg worker --articles`)", file=sys.stderr)
        print(json.dumps({**done.as_json(), **chosen}))
        return 0

    return database.with_database(settings, run)
