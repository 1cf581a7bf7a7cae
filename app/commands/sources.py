"""`newsagg opml import|export`: sources in and out as OPML; `newsagg sources merge`: one feed under two ids, one."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from app.commands import database
from app.settings import Settings

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine


def opml(settings: Settings, args: argparse.Namespace) -> int:
    from app.db.engine import session_factory
    from app.sources.errors import SourceRejected
    from app.sources.opml import OpmlError
    from app.sources.portability import export_opml, import_opml

    async def run(engine: AsyncEngine) -> int:
        async with session_factory(engine).begin() as session:
            if args.opml_command == "export":
                document = await export_opml(session)
                args.file.write_text(document) if args.file else sys.stdout.write(document)
                return 0
            try:
                report = await import_opml(session, settings, args.file.read_bytes())
            except (OpmlError, SourceRejected) as refusal:
                print(f"newsagg opml import: {args.file}: {refusal}", file=sys.stderr)
                return 1
        print(f"{len(report.created)} added, {report.existing} already present, {len(report.rejected)} refused")
        for url, error in report.rejected:
            print(f"  refused {url}: {error.code.value}: {error}", file=sys.stderr)
        return 0

    return database.with_database(settings, run)


def merge(settings: Settings, survivor: int, other: int) -> int:
    from app.sources.merge import SourcesNotMerged, merge_sources

    async def run(engine: AsyncEngine) -> int:
        try:
            async with engine.begin() as connection:
                done = await merge_sources(connection, survivor, other)
        except SourcesNotMerged as refusal:
            print(f"newsagg sources merge: {refusal}", file=sys.stderr)
            return 1
        print(f"source {done.merged} merged into source {done.survivor}: {done.articles_moved:,} articles moved, "
              f"{done.articles_merged:,} held by both merged into the survivor's, {done.stories:,} stories counted "
              "again; its fetch log, archive, follows and mutes moved")  # fmt: skip
        return 0

    return database.with_database(settings, run)
