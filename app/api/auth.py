"""Who is asking: the bearer credential of a request (the `Authorization` header over HTTP, the
`connection_init` payload over WebSocket), resolved once per request."""

from __future__ import annotations

from typing import Any

from app.api.context import Context, Info
from app.api.errors import BadRequest
from app.sources.service import SourceErrorCode, SourceRejected
from app.users.models import User
from app.users.service import authenticate

_VIEWER = "viewer"


def bearer(context: Any) -> str | None:
    """`Authorization: Bearer <token or key>`; over WebSocket, `{"authorization": "Bearer ..."}` in connection_init
    (a bare token is accepted too)."""
    params = getattr(context, "connection_params", None)
    if isinstance(params, dict):
        raw = params.get("authorization") or params.get("Authorization") or params.get("token")
    else:
        request = getattr(context, "request", None)
        headers = getattr(request, "headers", None)
        raw = headers.get("authorization") if headers is not None else None
    if not isinstance(raw, str) or not raw.strip():
        return None
    scheme, _, value = raw.strip().partition(" ")
    if not value:  # a bare token
        return scheme
    return value.strip() if scheme.lower() == "bearer" else None


async def viewer(info: Info) -> User | None:
    """The signed-in user, or None for an anonymous caller (or a credential that is expired or revoked)."""
    return await viewer_of(info.context)


async def viewer_of(context: Context) -> User | None:
    if _VIEWER not in context.extra:
        token = bearer(context)
        user = None
        if token:
            async with context.services.db.begin() as session:
                user = await authenticate(session, token)
        context.extra[_VIEWER] = user
    found: User | None = context.extra[_VIEWER]
    return found


async def require_viewer(info: Info) -> User:
    user = await viewer(info)
    if user is None:
        raise BadRequest("UNAUTHENTICATED", "sign in first: the bearer token is missing, expired or revoked")
    return user


async def require_source_admin(info: Info) -> None:
    """Source management: any caller when NEWSAGG_OPEN_SOURCE_ADMIN, else administrators only (FORBIDDEN)."""
    if info.context.services.settings.open_source_admin:
        return
    user = await viewer(info)
    if user is None or not user.is_admin:
        raise SourceRejected(SourceErrorCode.FORBIDDEN, "source management is restricted to administrators")
