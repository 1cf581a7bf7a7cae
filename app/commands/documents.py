"""`newsagg documents`: trusted GraphQL documents registered and listed."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from app.commands.database import with_database
from app.settings import Settings

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine


def documents(settings: Settings, args: argparse.Namespace) -> int:
    from app.db.engine import session_factory
    from app.documents import trusted

    async def run(engine: AsyncEngine) -> int:
        async with session_factory(engine).begin() as session:
            if args.documents_command == "list":
                for row in await trusted.registered(session):
                    print(f"{row.sha256}  {row.name or '-'}  {row.registered_at:%Y-%m-%d %H:%M}")
                return 0
            operations = [op for path in args.files for op in trusted.operations_in(path)]
            for digest, operation in zip(await trusted.register(session, operations), operations, strict=True):
                print(f"{digest}  {operation.name or '-'}")
        return 0

    return with_database(settings, run)
