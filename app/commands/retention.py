"""`newsagg prune`: one retention pass now, as the worker runs every hour; `--dry-run` counts what it would delete."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from app.commands.database import with_database, with_engine
from app.settings import Settings

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine


def prune(settings: Settings, dry_run: bool) -> int:
    from app.notifications.repository import PRUNED
    from app.retention.policy import KINDS
    from app.retention.service import count_due, prune

    async def run(engine: AsyncEngine) -> int:
        now = datetime.now(UTC)
        if dry_run:
            found = await count_due(engine, settings, now)
            for kind, count in found.items():
                print(f"{kind:<12} {'kept forever' if count is None else f'{count:,} due'}")
            return 0
        done = await prune(engine, settings, now)
        for kind in (*KINDS, *PRUNED):
            print(f"{kind:<12} {done.deleted[kind]:,} deleted")
        print(f"{done.batches} batches, the longest {done.longest_batch_s:.2f} s; "
              f"{len(done.stories_repaired)} stories repaired, {done.stories_emptied} emptied")  # fmt: skip
        return 0

    if dry_run and settings.database_url:  # counting changes nothing, the schema included: no migration
        return with_engine(settings, run)
    return with_database(settings, run)
