"""Who may open a GraphQL WebSocket, decided at connection_init: a credential that is presented must be good (else
4403 Forbidden), and each client (signed-in user, else its address as the rate limits read it, through the trusted
proxies) holds at most so many connections across every API process (else 4429). The connection's lease is kept
in its context for the handler to renew and release."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

from redis.exceptions import RedisError
from strawberry.exceptions import ConnectionRejectionError

from app.api import auth
from app.api.context import Context
from app.api.rate_limit import address_of
from app.api.ws_metrics import CLIENT_COUNT_FAILURES, REFUSALS
from app.realtime.connections import ConnectionLeases

log = logging.getLogger(__name__)
LEASE = "ws_lease"


class TooManyConnections(Exception):
    code = 4429
    reason = "too many connections for this client"


@dataclass(frozen=True)
class Lease:
    leases: ConnectionLeases
    client: str
    connection: str
    seconds: float

    async def renew(self) -> None:
        try:
            await self.leases.renew(self.client, self.connection, self.seconds)
        except RedisError:
            log.warning("WebSocket lease not renewed: Redis unavailable")

    async def release(self) -> None:
        try:
            await self.leases.release(self.client, self.connection)
        except RedisError:
            log.warning("WebSocket lease not released (it runs out): Redis unavailable")


async def admit(context: Context, limit: int, lease_seconds: float) -> None:
    """Raises ConnectionRejectionError (strawberry closes 4403) or TooManyConnections."""
    user = await auth.viewer_of(context)
    if user is None and auth.presented(context.connection_params):
        REFUSALS.labels("forbidden").inc()
        raise ConnectionRejectionError
    client = f"user:{user.id}" if user is not None else f"address:{address_of(context)}"
    lease = Lease(ConnectionLeases(context.services.redis), client, uuid.uuid4().hex, lease_seconds)
    try:
        admitted = await lease.leases.acquire(client, lease.connection, limit, lease_seconds)
    except RedisError:
        CLIENT_COUNT_FAILURES.inc()  # admitted uncounted: Redis being down must not close the API's sockets
        log.warning("WebSocket admitted without counting it: Redis unavailable")
        return
    if not admitted:
        REFUSALS.labels("too_many_connections").inc()
        raise TooManyConnections
    context.extra[LEASE] = lease
