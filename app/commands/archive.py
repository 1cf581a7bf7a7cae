"""`newsagg replay` (archived bodies of a source through today's parser, with its summary) and `newsagg fetch show`
(what one fetch received and what it produced)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Iterable
from datetime import datetime
from typing import TYPE_CHECKING, BinaryIO

from app.archive.terminal import written_out
from app.commands.articles import progress_bar
from app.commands.database import with_database
from app.settings import Settings

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from sqlalchemy.ext.asyncio import AsyncEngine

    from app.archive.replay import ReplaySummary
    from app.archive.service import FetchReport


def replay(settings: Settings, source_id: int, since: datetime) -> int:
    from sqlalchemy.exc import SQLAlchemyError

    from app.archive.replay import ReplayInterrupted, SourceNotFound
    from app.archive.replay import replay as replay_source

    # Redrawn in place on a terminal only: piped or logged, stderr gets no carriage returns, stdout only the summary.
    progress = progress_bar if sys.stderr.isatty() else None

    async def run(engine: AsyncEngine) -> int:
        try:
            async with trending_redis(settings) as redis:
                done = await replay_source(engine, settings, source_id, since=since, progress=progress, redis=redis)
        except SourceNotFound as error:
            print(f"newsagg replay: {error}", file=sys.stderr)
            return 1
        except ReplayInterrupted as interrupted:
            print(f"\nnewsagg replay: {interrupted}.\n{summary(interrupted.done, source_id, since)}\nWhat was "
                  "replayed is stored; run the same command again once the database is back: fetches replayed "
                  "already change nothing the second time.", file=sys.stderr)  # fmt: skip
            return 1
        print(summary(done, source_id, since))
        return 0

    try:
        return with_database(settings, run)
    except (SQLAlchemyError, OSError) as error:  # the database not reached at all (before the replay began)
        print(f"newsagg replay: the database cannot be reached ({type(error).__name__}: {error}); nothing was "
              "replayed", file=sys.stderr)  # fmt: skip
        return 1


@contextlib.asynccontextmanager
async def trending_redis(settings: Settings) -> AsyncIterator[Redis | None]:
    """Where the replay counts arrivals for trending: REDIS_URL, or the running `newsagg up`'s Redis; None without
    either (the articles are stored and clustered all the same, their arrivals not counted)."""
    from app.redis_client import redis_client
    from app.runtime.servers_file import running_redis_url

    url = settings.redis_url or running_redis_url(settings.home)
    if url is None:
        yield None
        return
    redis = redis_client(settings, url)
    try:
        yield redis
    finally:
        await redis.aclose()


def summary(done: ReplaySummary, source_id: int, since: datetime) -> str:
    lines = [f"replayed {done.fetches:,} archived fetches of source {source_id} since {since.isoformat()} "
             f"in {done.batches:,} batches",
             f"items seen    {done.items:,}", f"new articles  {done.new:,}", f"updated       {done.updated:,}",
             f"unchanged     {done.unchanged:,}", f"parse errors  {done.parse_errors:,}",
             f"damaged       {done.damaged:,}"]  # fmt: skip
    if done.changed_nothing:
        lines.append("nothing changed: the articles stored are what today's parser reads in these fetches")
    else:
        lines.append(f"new articles clustered into stories: {done.clustered:,}; "
                     f"updated articles understood again: {done.understood_again:,}, "
                     f"their stories labelled again: {done.stories_repaired:,}")  # fmt: skip
    if done.changes:
        lines.append(f"updated articles (the first {len(done.changes)}):")
        lines += [f"  article {c.article_id} from fetch {c.fetch_id}: {', '.join(c.fields)}" for c in done.changes]
    if done.failures:
        lines.append(f"fetches not read (the first {len(done.failures)}):")
        lines += [f"  fetch {f.fetch_id}: {f.kind}: {f.reason}" for f in done.failures]
    return "\n".join(lines)


def show(settings: Settings, fetch_id: int, body: bool, *, limit: int | None = None) -> int:
    from app.archive.compression import DamagedBody
    from app.archive.service import archived_body, show

    async def run(engine: AsyncEngine) -> int:
        async with engine.connect() as connection:
            report = await show(connection, fetch_id)
            try:
                content = await archived_body(connection, settings, fetch_id) if body and report else None
            except (DamagedBody, LookupError) as error:
                print(f"newsagg fetch show: fetch {fetch_id}'s archived body is damaged: {error}", file=sys.stderr)
                return 1
        if report is None:
            print(f"newsagg fetch show: no fetch {fetch_id} (never made, or past the fetch log's retention)",
                  file=sys.stderr)  # fmt: skip
            return 1
        if not body:
            print(_report(report))
            return 0
        if content is None:
            print(f"newsagg fetch show: fetch {fetch_id} has no archived body", file=sys.stderr)
            return 1
        return _write_body(fetch_id, content.chunks, content.raw_bytes, limit, sys.stdout.buffer)

    return with_database(settings, run)


def _write_body(fetch_id: int, chunks: Iterable[bytes], raw_bytes: int, limit: int | None, out: BinaryIO) -> int:
    from app.archive.compression import DamagedBody

    try:
        written = written_out(chunks, out, limit=limit, terminal=out.isatty())
    except DamagedBody as error:
        out.flush()
        print(f"\nnewsagg fetch show: fetch {fetch_id}'s archived body is damaged: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `| head`: the reader has all it wanted
        return 0
    out.flush()
    if written < raw_bytes:
        print(f"\nnewsagg fetch show: body cut at {written:,} of {raw_bytes:,} bytes "
              "(--full prints all of it, --max-bytes N the first N)", file=sys.stderr)  # fmt: skip
    return 0


def _report(report: FetchReport) -> str:
    f = report.fetch
    status = f"HTTP {f.status_code}" if f.status_code else "no HTTP status"
    lines = [f"fetch {f.id} of source {f.source_id} ({f.source_name}, {f.feed_url})",
             f"at {f.fetched_at.isoformat()}: {status}, {f.bytes:,} bytes in {f.duration_ms} ms; "
             f"{f.items_seen} items seen, {f.items_new} new"]  # fmt: skip
    if f.error_class:
        lines.append(f"error: {f.error_class}: {f.error_message or ''}")
    if f.archived_url is None:
        lines.append("body: not archived (not modified, failed, or past the archive's retention)")
    else:
        ratio = f.raw_bytes / max(f.stored_bytes, 1)
        lines.append(f"body: {f.archived_url}, {f.raw_bytes:,} bytes kept in {f.stored_bytes:,} (zstd, {ratio:.1f}x); "
                     f"`newsagg fetch show {f.id} --body` prints it")  # fmt: skip
        lines += ["headers:", *(f"  {name}: {value}" for name, value in sorted(f.headers.items()))]
    lines.append(f"produced {len(report.produced)} articles:" if report.produced else "produced no article")
    lines += [f"  {a.change:<8} {a.id:>8}  {a.title}  {a.url or ''}" for a in report.produced]
    return "\n".join(lines)
