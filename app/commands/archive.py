"""`newsagg replay` (archived bodies of a source through today's parser, with its summary) and `newsagg fetch show`
(what one fetch received and what it produced)."""

from __future__ import annotations

import sys
from datetime import datetime
from typing import TYPE_CHECKING

from app.commands.articles import progress_bar
from app.commands.database import with_database
from app.settings import Settings

if TYPE_CHECKING:
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
            done = await replay_source(engine, settings, source_id, since=since, progress=progress)
        except SourceNotFound as error:
            print(f"newsagg replay: {error}", file=sys.stderr)
            return 1
        except ReplayInterrupted as interrupted:
            print(f"\nnewsagg replay: {interrupted}.\n{_summary(interrupted.done, source_id, since)}\nWhat was "
                  "replayed is stored; run the same command again once the database is back: fetches replayed "
                  "already change nothing the second time.", file=sys.stderr)  # fmt: skip
            return 1
        print(_summary(done, source_id, since))
        return 0

    try:
        return with_database(settings, run)
    except (SQLAlchemyError, OSError) as error:  # the database not reached at all (before the replay began)
        print(f"newsagg replay: the database cannot be reached ({type(error).__name__}: {error}); nothing was "
              "replayed", file=sys.stderr)  # fmt: skip
        return 1


def _summary(done: ReplaySummary, source_id: int, since: datetime) -> str:
    lines = [f"replayed {done.fetches:,} archived fetches of source {source_id} since {since.isoformat()}",
             f"items seen    {done.items:,}", f"new articles  {done.new:,}", f"updated       {done.updated:,}",
             f"unchanged     {done.unchanged:,}", f"parse errors  {done.parse_errors:,}"]  # fmt: skip
    if done.changes:
        lines.append(f"updated articles (the first {len(done.changes)}):")
        lines += [f"  article {c.article_id} from fetch {c.fetch_id}: {', '.join(c.fields)}" for c in done.changes]
    return "\n".join(lines)


def show(settings: Settings, fetch_id: int, body: bool) -> int:
    from app.archive.service import archived_body, show

    async def run(engine: AsyncEngine) -> int:
        async with engine.connect() as connection:
            report = await show(connection, fetch_id)
            content = await archived_body(connection, fetch_id) if body and report else None
        if report is None:
            print(f"newsagg fetch show: no fetch {fetch_id} (never made, or past the fetch log's retention)",
                  file=sys.stderr)  # fmt: skip
            return 1
        if body:
            if content is None:
                print(f"newsagg fetch show: fetch {fetch_id} has no archived body", file=sys.stderr)
                return 1
            sys.stdout.buffer.write(content)
            return 0
        print(_report(report))
        return 0

    return with_database(settings, run)


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
