"""`newsagg users`: administrators made, granted and revoked; the first-administrator hint at start."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from app.commands.database import with_database
from app.settings import Settings

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine


def users(settings: Settings, args: argparse.Namespace) -> int:
    from app.db.engine import session_factory
    from app.users.errors import AccountRejected
    from app.users.service import register, set_admin

    password = new_password() if args.users_command == "create-admin" else ""

    async def run(engine: AsyncEngine) -> int:
        async with session_factory(engine).begin() as session:
            if args.users_command == "create-admin":
                try:
                    await register(session, args.email, password, admin=True)
                except AccountRejected as error:
                    print(f"{args.email}: {error}", file=sys.stderr)
                    return 1
                found = True
            else:
                found = await set_admin(session, args.email, args.users_command == "grant-admin")
        if not found:
            print(f"no account with the email {args.email}", file=sys.stderr)
            return 1
        print(f"{args.email}: user" if args.users_command == "revoke-admin" else f"{args.email}: administrator")
        return 0

    return with_database(settings, run)


def new_password() -> str:
    """Asked twice on a terminal; otherwise the first line of standard input (scripts, containers)."""
    import getpass

    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\n")
    password = getpass.getpass("password: ")
    if getpass.getpass("again: ") != password:
        raise SystemExit("the passwords differ")
    return password


def first_admin_hint(settings: Settings) -> None:
    """Logged at start while no account is an administrator (a fresh database): how to make the first one."""
    import asyncio
    import logging

    from app.db.engine import create_engine, session_factory
    from app.users.service import first_admin_hint

    async def hint() -> str | None:
        engine = create_engine(settings)
        try:
            async with session_factory(engine)() as session:
                return await first_admin_hint(session)
        finally:
            await engine.dispose()

    try:
        found = asyncio.run(hint())
    except Exception as error:  # the API starts anyway, and says what is wrong with the database itself
        logging.getLogger(__name__).warning("could not check for an administrator: %s", error)
        return
    if found:
        logging.getLogger(__name__).warning(found)
