"""signUp, logIn, logOut, apiKeyCreate, apiKeyRevoke: accounts and the credentials that act for them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

import strawberry
from sqlalchemy.ext.asyncio import AsyncSession

from app.api.auth import CREDENTIALS, bearer, require_viewer
from app.api.context import Info
from app.api.errors import bad_argument
from app.api.rate_limit import admit_attempt
from app.api.relay import database_id
from app.api.types.account_error import AccountError, refused
from app.api.types.viewer import ApiKeyInfo, Viewer
from app.ratelimit.callers import account_key
from app.users.errors import AccountRejected
from app.users.models import User
from app.users.service import Credential, create_api_key, log_in, log_out, revoke_api_key, sign_up


@strawberry.input(description="An email and a password (10 to 1,024 characters).")
class CredentialsInput:
    email: str
    password: str


@strawberry.type(description="A bearer token for `Authorization: Bearer ...` (or connection_init over WebSocket).")
class AuthPayload:
    token: str | None
    expires_at: datetime | None
    viewer: Viewer | None
    errors: list[AccountError]


@strawberry.type
class LogOutPayload:
    revoked: int = strawberry.field(description="How many sessions were ended.")


@strawberry.type
class ApiKeyPayload:
    key: str | None = strawberry.field(description="The key itself: shown this once, stored only as a digest.")
    api_key: ApiKeyInfo | None
    errors: list[AccountError]


def _lifetime(info: Info) -> timedelta:
    return timedelta(days=info.context.services.settings.session_days)


async def _signed_in(info: Info, start: Callable[[AsyncSession], Awaitable[tuple[User, Credential]]]) -> AuthPayload:
    try:
        async with info.context.services.db.begin() as session:
            user, credential = await start(session)
            viewer = Viewer.from_model(user)
    except AccountRejected as error:
        return AuthPayload(token=None, expires_at=None, viewer=None, errors=refused(error))
    return AuthPayload(token=credential.secret, expires_at=credential.expires_at, viewer=viewer, errors=[])


async def sign_up_resolver(info: Info, input: CredentialsInput) -> AuthPayload:
    await admit_attempt(info.context, "signUp", account_key(input.email))
    return await _signed_in(info, lambda session: sign_up(session, input.email, input.password, _lifetime(info)))


async def log_in_resolver(info: Info, input: CredentialsInput) -> AuthPayload:
    await admit_attempt(info.context, "logIn", account_key(input.email))
    return await _signed_in(info, lambda session: log_in(session, input.email, input.password, _lifetime(info)))


async def log_out_resolver(info: Info, everywhere: bool = False) -> LogOutPayload:
    token = bearer(info.context)
    if not token:
        return LogOutPayload(revoked=0)
    async with info.context.services.db.begin() as session:
        revoked = await log_out(session, token, everywhere=everywhere)
    CREDENTIALS.forget_all()
    return LogOutPayload(revoked=revoked)


async def api_key_create_resolver(info: Info, name: str) -> ApiKeyPayload:
    user = await require_viewer(info)
    await admit_attempt(info.context, "apiKeyCreate", f"user:{user.id}")
    try:
        async with info.context.services.db.begin() as session:
            key, credential = await create_api_key(session, user, name)
            created = ApiKeyInfo.from_model(key)
    except AccountRejected as error:
        return ApiKeyPayload(key=None, api_key=None, errors=refused(error))
    return ApiKeyPayload(key=credential.secret, api_key=created, errors=[])


async def api_key_revoke_resolver(info: Info, id: strawberry.ID) -> ApiKeyPayload:
    user = await require_viewer(info)
    key_id = database_id(id)
    if key_id < 0:
        raise bad_argument("`id` is an API key's id")
    try:
        async with info.context.services.db.begin() as session:
            key = await revoke_api_key(session, user, key_id)
            revoked = ApiKeyInfo.from_model(key)
    except AccountRejected as error:
        return ApiKeyPayload(key=None, api_key=None, errors=refused(error))
    CREDENTIALS.forget_all()
    return ApiKeyPayload(key=None, api_key=revoked, errors=[])
