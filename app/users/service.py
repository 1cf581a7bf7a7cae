"""Accounts: sign-up, sign-in sessions (bearer tokens that expire and can be revoked), API keys for apps, and who a
bearer credential belongs to. Tokens and keys are random, shown once, and stored only as SHA-256 digests."""

from __future__ import annotations

import asyncio
import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import ColumnElement, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from app.users.errors import AccountErrorCode, AccountRejected
from app.users.models import ApiKey, User, UserSession
from app.users.passwords import dummy_hash, hash_password, verify_password

SESSION_PREFIX = "nas_"  # newsagg session
API_KEY_PREFIX = "nak_"  # newsagg API key
EMAIL = re.compile(r"[^@\s]{1,64}@[^@\s]{1,255}\.[^@\s.]{2,63}")
MIN_PASSWORD, MAX_PASSWORD = 10, 1024


@dataclass(frozen=True, slots=True)
class Credential:
    secret: str  # shown to the caller once
    expires_at: datetime | None


def digest(secret: str) -> str:
    # surrogatepass: a credential with a lone surrogate (a WebSocket's connection_init can carry one) is one that
    # matches nothing, not a crash
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def _secret(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)


def normalize_email(email: str) -> str:
    email = email.strip().lower()
    if len(email) > 320 or not EMAIL.fullmatch(email):
        raise AccountRejected(AccountErrorCode.INVALID_EMAIL, "not an email address", "email")
    return email


async def sign_up(session: AsyncSession, email: str, password: str, lifetime: timedelta) -> tuple[User, Credential]:
    user = await register(session, email, password)
    return user, await start_session(session, user, lifetime)


async def register(session: AsyncSession, email: str, password: str, *, admin: bool = False) -> User:
    """A new account (not signed in); `admin` for the operator's own (`newsagg users create-admin`)."""
    email = normalize_email(email)
    if not MIN_PASSWORD <= len(password) <= MAX_PASSWORD:
        raise AccountRejected(AccountErrorCode.WEAK_PASSWORD,
                              f"a password has {MIN_PASSWORD} to {MAX_PASSWORD} characters", "password")  # fmt: skip
    user = User(email=email, password_hash=await asyncio.to_thread(hash_password, password), is_admin=admin)
    session.add(user)
    try:
        async with session.begin_nested():
            await session.flush()
    except IntegrityError as error:
        raise AccountRejected(AccountErrorCode.EMAIL_TAKEN, "an account with this email exists", "email") from error
    return user


def _live_session(token_hash: str) -> tuple[ColumnElement[bool], ...]:
    """The session of this token, if it is neither revoked nor expired."""
    return UserSession.token_hash == token_hash, UserSession.revoked_at.is_(None), UserSession.expires_at > func.now()


async def has_account(session: AsyncSession, email: str) -> bool:
    """Whether an account has this email (matched as `log_in` matches it)."""
    return await session.scalar(select(User.id).where(_email_is(email)).limit(1)) is not None


def _email_is(email: str) -> ColumnElement[bool]:
    """Matches the account whatever the case or surrounding spaces of `email` (not validated: a lookup only)."""
    return func.lower(User.email) == email.strip().lower()


async def log_in(session: AsyncSession, email: str, password: str, lifetime: timedelta) -> tuple[User, Credential]:
    user = await session.scalar(select(User).where(_email_is(email)))
    valid = await asyncio.to_thread(verify_password, password, user.password_hash if user else dummy_hash())
    if user is None or not valid:
        raise AccountRejected(AccountErrorCode.INVALID_CREDENTIALS, "wrong email or password")
    return user, await start_session(session, user, lifetime)


async def start_session(session: AsyncSession, user: User, lifetime: timedelta) -> Credential:
    token = _secret(SESSION_PREFIX)
    expires_at = datetime.now(UTC) + lifetime
    session.add(UserSession(user_id=user.id, token_hash=digest(token), expires_at=expires_at))
    await session.flush()
    return Credential(token, expires_at)


async def log_out(session: AsyncSession, token: str, *, everywhere: bool = False) -> int:
    """Revokes this session (or every session of its user); returns how many were revoked. Only a live session may:
    a leaked token that is already revoked or expired ends nothing."""
    current = await session.scalar(select(UserSession).where(*_live_session(digest(token))))
    if current is None:
        return 0
    condition = UserSession.user_id == current.user_id if everywhere else UserSession.id == current.id
    result = await session.execute(update(UserSession).where(condition, UserSession.revoked_at.is_(None))
                                   .values(revoked_at=func.now()))  # fmt: skip
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


async def create_api_key(session: AsyncSession, user: User, name: str) -> tuple[ApiKey, Credential]:
    name = name.strip()
    if not 1 <= len(name) <= 100:
        raise AccountRejected(AccountErrorCode.INVALID, "a key's name has 1 to 100 characters", "name")
    secret = _secret(API_KEY_PREFIX)
    key = ApiKey(user_id=user.id, name=name, key_hash=digest(secret))
    session.add(key)
    await session.flush()
    return key, Credential(secret, None)


async def revoke_api_key(session: AsyncSession, user: User, key_id: int) -> ApiKey:
    key = await session.scalar(select(ApiKey).where(ApiKey.id == key_id, ApiKey.user_id == user.id))
    if key is None:  # another user's key is no more found than a missing one
        raise AccountRejected(AccountErrorCode.NOT_FOUND, "no such API key", "id")
    if key.revoked_at is None:
        key.revoked_at = datetime.now(UTC)
    return key


async def authenticate(session: AsyncSession, bearer: str) -> User | None:
    """The user behind a session token or an API key, if it is valid now."""
    hashed = digest(bearer)
    if bearer.startswith(SESSION_PREFIX):
        return await session.scalar(
            select(User).join(UserSession, UserSession.user_id == User.id).where(*_live_session(hashed))
        )
    if bearer.startswith(API_KEY_PREFIX):
        user = await session.scalar(select(User).join(ApiKey, ApiKey.user_id == User.id)
                                    .where(ApiKey.key_hash == hashed, ApiKey.revoked_at.is_(None)))  # fmt: skip
        if user is not None:
            await session.execute(update(ApiKey).where(ApiKey.key_hash == hashed).values(last_used_at=func.now()))
        return user
    return None


async def set_admin(session: AsyncSession, email: str, admin: bool) -> bool:
    """Grants (or takes away) administration, which lets an account manage sources, to the account with this email
    (matched as `log_in` matches it). False when there is no such account."""
    result = await session.execute(update(User).where(_email_is(email)).values(is_admin=admin))
    return bool(result.rowcount)  # type: ignore[attr-defined]


FIRST_ADMIN_HINT = (
    "no administrator yet: only administrators add, change and delete sources (unless NEWSAGG_OPEN_SOURCE_ADMIN) "
    "and set their authority. Make the first one with `newsagg users create-admin EMAIL` (asks for a password), "
    "or sign up through the API (signUp) and run `newsagg users grant-admin EMAIL`"
)


async def first_admin_hint(session: AsyncSession) -> str | None:
    """How to make the first administrator, while there is none."""
    if await session.scalar(select(User.id).where(User.is_admin).limit(1)) is not None:
        return None
    return FIRST_ADMIN_HINT
