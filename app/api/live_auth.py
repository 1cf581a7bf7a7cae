"""A reader's own subscription lasts as long as the credential it was opened with: signing out, revoking the key or
the session expiring ends it with UNAUTHENTICATED, rather than it streaming on for the socket's life."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from typing import TypeVar

from app.api.auth import authenticated
from app.api.context import Context
from app.api.errors import BadRequest
from app.users.models import User

T = TypeVar("T")


async def still_signed_in(context: Context, user: User) -> None:
    """UNAUTHENTICATED unless the credential `context` carries names `user` now: checked again (through the
    process's credential cache), never remembered; a check that finds PostgreSQL away waits it out, logged and counted
    as the `live_auth` part's outage."""
    current = await context.services.live_auth.retried(lambda: authenticated(context))
    if current is None or current.id != user.id:
        raise BadRequest("UNAUTHENTICATED", "signed out: the bearer token has expired or was revoked")


async def while_signed_in(context: Context, user: User, stream: AsyncGenerator[T, None],
                          every: float) -> AsyncGenerator[T, None]:  # fmt: skip
    """`stream`'s items while `user` stays signed in: checked before each item goes out, and every `every` seconds
    while none comes (so an idle subscription ends too, and holds nothing for a reader who left)."""
    pending: asyncio.Future[T] | None = None
    try:
        while True:
            if pending is None:  # the stream's next item, waited for across checks: never cut off midway
                pending = asyncio.ensure_future(anext(stream))
            done, _ = await asyncio.wait({pending}, timeout=every)
            await still_signed_in(context, user)
            if done:
                try:
                    item = pending.result()
                except StopAsyncIteration:
                    return
                pending = None
                yield item
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await pending
        await stream.aclose()
