"""Who is asking: the bearer credential of a request (the `Authorization` header over HTTP, the
`connection_init` payload over WebSocket), resolved once per request."""

from __future__ import annotations

import time
from typing import Any

from app.api.context import Context, Info
from app.api.errors import BadRequest
from app.sources.errors import SourceErrorCode, SourceRejected
from app.users.models import User
from app.users.service import authenticate, digest

_VIEWER = "viewer"


CREDENTIAL_PARAMS = ("authorization", "Authorization", "token", "apiKey")  # connection_init payload keys


def presented(params: dict[str, Any]) -> bool:
    """Whether a connection_init payload carries a credential at all (even one that turns out to be bad)."""
    return any(params.get(key) not in (None, "") for key in CREDENTIAL_PARAMS)


def bearer(context: Any) -> str | None:
    """`Authorization: Bearer <token or key>`; over WebSocket, `{"authorization": "Bearer ..."}` or
    `{"apiKey": "..."}` in connection_init (a bare token is accepted too)."""
    params = getattr(context, "connection_params", None)
    if isinstance(params, dict):
        raw = next((params[key] for key in CREDENTIAL_PARAMS if params.get(key)), None)
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


class Credentials:
    """Bearer credentials this process resolved recently (token digest -> user), kept `NEWSAGG_AUTH_CACHE_SECONDS`: a
    feed page served from cache then costs no database round trip. Only accepted credentials are kept (made-up
    tokens cannot crowd them out), the oldest leaving first past LIMIT. Signing out and revoking a key here forget
    them all at once; elsewhere a revocation takes effect within that many seconds."""

    LIMIT = 10_000

    def __init__(self) -> None:
        self._seen: dict[str, tuple[float, User]] = {}

    def get(self, token: str, ttl_s: float) -> User | None:
        found = self._seen.get(digest(token))
        if found is None or time.monotonic() - found[0] >= ttl_s:
            return None
        return found[1]

    def put(self, token: str, user: User) -> None:
        key = digest(token)
        self._seen.pop(key, None)  # a token checked again goes to the back: the oldest leaves first
        while len(self._seen) >= self.LIMIT:
            del self._seen[next(iter(self._seen))]
        self._seen[key] = (time.monotonic(), user)

    def forget_all(self) -> None:
        self._seen.clear()


CREDENTIALS = Credentials()


async def viewer_of(context: Context) -> User | None:
    """Over HTTP, resolved once per request. On a WebSocket the credential is the connection's, so there it is
    checked again for each operation, and a reader's own subscription checks it as it goes (app/api/live_auth.py):
    signing out ends what the open socket may do."""
    per_request = not isinstance(context.connection_params, dict)
    if per_request and _VIEWER in context.extra:
        remembered: User | None = context.extra[_VIEWER]
        return remembered
    user = await authenticated(context)
    if per_request:
        context.extra[_VIEWER] = user
    return user


async def authenticated(context: Context) -> User | None:
    """Who the credential `context` carries names now (through the process's cache), or None."""
    token = bearer(context)
    if not token:
        return None
    ttl = context.services.settings.auth_cache_seconds
    user = CREDENTIALS.get(token, ttl) if ttl > 0 else None
    if user is None:
        async with context.services.db.begin() as session:
            user = await authenticate(session, token)
        if user is not None and ttl > 0:
            CREDENTIALS.put(token, user)
    return user


async def require_viewer(info: Info) -> User:
    user = await viewer(info)
    if user is None:
        raise BadRequest("UNAUTHENTICATED", "sign in first: the bearer token is missing, expired or revoked")
    return user


async def require_source_admin(info: Info, *, even_when_open: bool = False) -> bool:
    """Source management: administrators, and any caller when NEWSAGG_OPEN_SOURCE_ADMIN (unless `even_when_open`);
    FORBIDDEN otherwise. Returns whether the caller is an administrator: only they set what ranks a source."""
    user = await viewer(info)
    admin = user is not None and user.is_admin
    if not admin and (even_when_open or not info.context.services.settings.open_source_admin):
        raise SourceRejected(SourceErrorCode.FORBIDDEN, "source management is restricted to administrators")
    return admin
