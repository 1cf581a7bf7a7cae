"""Subscribing to hubs, verifying their intent, accepting their pushes, renewing leases."""

from __future__ import annotations

import enum
import logging
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import httpx
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.engine import Executor
from app.ingest.addresses import AddressRefused
from app.ingest.transport import request_to
from app.settings import Settings
from app.sources import repository as sources
from app.sources.models import Source, SourceStatus
from app.websub.protocol import Discovery, signature_matches

log = logging.getLogger(__name__)
SUBSCRIBING_PATIENCE = timedelta(hours=1)  # how long a hub may take to verify before we ask again


class PushVerdict(enum.StrEnum):
    ACCEPTED = "accepted"
    UNKNOWN = "unknown"  # no subscription has this callback
    UNSIGNED = "unsigned"  # we gave the hub a secret: an unsigned push is refused
    BAD_SIGNATURE = "bad_signature"  # acknowledged (so nobody can probe the secret) but ignored


@dataclass(frozen=True, slots=True)
class WebSubView:
    state: str | None
    hub: str | None
    lease_expires_at: datetime | None
    updated_at: datetime | None


def pushed(view: WebSubView, now: datetime) -> bool:
    """Is the hub pushing this source now (so that polling is only a safety net)?"""
    return view.state == "subscribed" and view.lease_expires_at is not None and view.lease_expires_at > now


def wants_subscription(view: WebSubView, found: Discovery | None, settings: Settings, now: datetime) -> bool:
    if found is None or not settings.public_url:
        return False
    since = now - view.updated_at if view.updated_at else timedelta.max
    if view.hub == found.hub and (pushed(view, now) or (view.state == "subscribing" and since < SUBSCRIBING_PATIENCE)):
        return False
    return not (view.state in ("failed", "denied") and since < timedelta(hours=settings.websub_retry_hours))


def callback_url(settings: Settings, token: str) -> str:
    assert settings.public_url
    return f"{settings.public_url.rstrip('/')}/websub/{token}"


async def subscribe(
    db: AsyncEngine, http: httpx.AsyncClient, settings: Settings, source_id: int, found: Discovery
) -> str:
    """Ask the hub to push `found.topic` to us; the subscription holds once the hub has verified our intent.
    A renewal keeps the callback and secret, so the hub updates its subscription rather than adding one."""
    async with db.begin() as connection:
        source = (await connection.execute(select(Source.websub_token, Source.websub_secret)
                                           .where(Source.id == source_id))).first()  # fmt: skip
        if source is None:
            return "gone"
        token, secret = source.websub_token or secrets.token_urlsafe(24), source.websub_secret or secrets.token_hex(32)
        await sources.update_source(connection, source_id, websub_hub=found.hub, websub_topic=found.topic,
                                    websub_token=token, websub_secret=secret, websub_state="subscribing",
                                    websub_updated_at=datetime.now(UTC))  # fmt: skip
    form = {"hub.mode": "subscribe", "hub.topic": found.topic, "hub.callback": callback_url(settings, token),
            "hub.secret": secret, "hub.lease_seconds": str(settings.websub_lease_seconds)}  # fmt: skip
    try:
        response = await http.send(request_to(http, "POST", found.hub, data=form))
        state = "subscribing" if response.status_code in (200, 202, 204) else "failed"
        detail = f"HTTP {response.status_code}"
    except (httpx.HTTPError, AddressRefused) as error:  # UnusableURL among them: a hub URL that names no address
        state, detail = "failed", f"{type(error).__name__}: {error}"
    if state == "failed":
        log.warning("hub %s refused the subscription to %s: %s", found.hub, found.topic, detail)
        async with db.begin() as connection:
            await sources.update_source(connection, source_id, websub_state=state, websub_updated_at=datetime.now(UTC))
    return state


async def verify_intent(
    db: Executor, token: str, mode: str, topic: str, lease_seconds: int | None, settings: Settings
) -> bool:
    """The hub checks that we asked for this: True (echo the challenge) only for a subscription we requested."""
    source = await sources.source_by_websub_token(db, token)
    if source is None or topic != source.websub_topic:
        return False
    now = datetime.now(UTC)
    if mode == "subscribe" and source.websub_state in ("subscribing", "subscribed"):
        lease = timedelta(seconds=lease_seconds or settings.websub_lease_seconds)
        await sources.update_source(db, source.id, websub_state="subscribed", websub_lease_expires_at=now + lease,
                                    websub_updated_at=now)  # fmt: skip
        return True
    if mode == "denied":
        await sources.update_source(db, source.id, websub_state="denied", websub_updated_at=now)
        return True
    return False  # we never asked to unsubscribe: refuse, so nobody can cancel our subscription


async def accept_push(db: Executor, token: str, body: bytes, signature: str | None) -> tuple[PushVerdict, int | None]:
    source = await sources.source_by_websub_token(db, token)
    if source is None or not source.websub_secret or source.status != SourceStatus.ACTIVE:
        return PushVerdict.UNKNOWN, None
    if not signature:
        return PushVerdict.UNSIGNED, source.id
    if not signature_matches(source.websub_secret, body, signature):
        log.warning("push for source %s with a bad signature: ignored", source.id)
        await sources.add_fetch_log(db, source_id=source.id, status_code=None, duration_ms=0, bytes=len(body),
                                    items_seen=0, items_new=0, error_class="push_bad_signature",
                                    error_message="X-Hub-Signature did not match")  # fmt: skip
        return PushVerdict.BAD_SIGNATURE, source.id
    return PushVerdict.ACCEPTED, source.id


async def renewals_due(db: Executor, settings: Settings) -> list[tuple[int, Discovery]]:
    """Subscriptions whose lease ends within the renewal margin."""
    horizon = datetime.now(UTC) + timedelta(hours=settings.websub_renew_before_hours)
    rows = await db.execute(
        select(Source.id, Source.websub_hub, Source.websub_topic).where(
            Source.websub_state == "subscribed", Source.websub_lease_expires_at < horizon,
            Source.status == SourceStatus.ACTIVE,
        )
    )  # fmt: skip
    return [(row.id, Discovery(hub=row.websub_hub, topic=row.websub_topic)) for row in rows]
