"""What a fresh deployment needs beside its schema, done on every start and harmless when done: the default sources
on a database without any, and the administrator the settings name (`newsagg up`, `newsagg migrate --first-start`)."""

from __future__ import annotations

import logging

from sqlalchemy.ext.asyncio import AsyncSession

from app.settings import Settings
from app.sources.portability import load_default_sources
from app.users.errors import AccountErrorCode, AccountRejected
from app.users.service import has_account, register

log = logging.getLogger(__name__)


class FirstStartFailed(RuntimeError):
    """The settings name an administrator that cannot be made (no readable password, a weak one)."""


async def first_start(session: AsyncSession, settings: Settings) -> None:
    await load_default_sources(session, settings)
    if settings.admin_email:
        await _administrator(session, settings, settings.admin_email)


async def _administrator(session: AsyncSession, settings: Settings, email: str) -> None:
    """Creates the account, an administrator, when no account has this email. An existing one is left as it is:
    anyone may have signed up with the address (emails are not verified), so only an operator grants it. The password
    file is read only when the account is to be made: once it exists, the file may be emptied or gone."""
    if await has_account(session, email):
        log.info("NEWSAGG_ADMIN_EMAIL %s has an account already: left as it is", email)
        return
    try:
        await register(session, email, _password(settings), admin=True)
    except AccountRejected as error:
        if error.code is AccountErrorCode.EMAIL_TAKEN:  # another start made it meanwhile
            return
        raise FirstStartFailed(f"NEWSAGG_ADMIN_EMAIL {email}: {error}") from error
    log.info("administrator %s created (NEWSAGG_ADMIN_EMAIL)", email)


def _password(settings: Settings) -> str:
    path = settings.admin_password_file
    if path is None:
        raise FirstStartFailed("NEWSAGG_ADMIN_EMAIL is set without NEWSAGG_ADMIN_PASSWORD_FILE (its password)")
    try:
        return path.read_text().rstrip("\n")
    except OSError as error:
        raise FirstStartFailed(f"NEWSAGG_ADMIN_PASSWORD_FILE {path}: {error.strerror}") from error
