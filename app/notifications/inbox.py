"""The in-app channel as a reader sees it: their notifications newest first, read state, and webhook endpoints of
their API keys."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

from sqlalchemy import BigInteger, bindparam, func, select, update
from sqlalchemy.dialects.postgresql import ARRAY, insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.ingest.addresses import AddressRefused, UnusableURL, check_url_target
from app.notifications.errors import AlertErrorCode, AlertRejected
from app.notifications.models import Notification, WebhookEndpoint
from app.users.models import ApiKey

MAX_URL = 2000


async def page(session: AsyncSession, user_id: int, *, before: int | None, limit: int,
               unread_only: bool) -> list[Notification]:  # fmt: skip
    """The reader's notifications, newest first, older than the notification `before`."""
    query = select(Notification).where(Notification.user_id == user_id).order_by(Notification.id.desc()).limit(limit)
    if before is not None:
        query = query.where(Notification.id < before)
    if unread_only:
        query = query.where(Notification.read_at.is_(None))
    return list(await session.scalars(query))


async def owned(session: AsyncSession, user_id: int, ids: list[int]) -> dict[int, Notification]:
    """The reader's notifications among `ids` (another reader's are not found)."""
    rows = await session.scalars(select(Notification).where(Notification.id.in_(ids), Notification.user_id == user_id))
    return {row.id: row for row in rows}


async def resume_point(session: AsyncSession, user_id: int, after: int | None, *, keep: int) -> int:
    """Where a live subscription starts: after `after` (of at most the `keep` newest notifications), or after the
    reader's newest one when none is given."""
    newest = select(Notification.id).where(Notification.user_id == user_id).order_by(Notification.id.desc())
    if after is None:
        return int(await session.scalar(newest.limit(1)) or 0)
    floor = await session.scalar(newest.offset(keep).limit(1))
    return max(after, int(floor or 0))


async def newer(session: AsyncSession, afters: dict[int, int], *, since: datetime, limit: int = 500,
                ) -> list[Notification]:  # fmt: skip
    """The notifications of the readers of `afters` (reader id -> notification id), each reader's after their own id,
    in id order, then those written since `since` that are not (a batch that committed after a later one): one
    statement however many readers."""
    readers = func.unnest(bindparam("reader_ids", list(afters), type_=ARRAY(BigInteger)),
                          bindparam("after_ids", list(afters.values()), type_=ARRAY(BigInteger)),
                          ).table_valued("user_id", "after_id").render_derived()  # fmt: skip
    newer = Notification.id > readers.c.after_id
    query = (select(Notification).join(readers, Notification.user_id == readers.c.user_id)
             .where(newer | (Notification.created_at > since))
             .order_by(newer.desc(), Notification.id).limit(limit))  # fmt: skip
    return list(await session.scalars(query))


async def for_event(session: AsyncSession, user_id: int, event_id: int) -> Notification | None:
    return await session.scalar(select(Notification).where(Notification.user_id == user_id,
                                                           Notification.event_id == event_id))  # fmt: skip


async def mark_read(session: AsyncSession, user_id: int, ids: list[int] | None) -> int:
    """Marks the reader's notifications `ids` (None: all) read; another reader's ids change nothing."""
    query = update(Notification).where(Notification.user_id == user_id, Notification.read_at.is_(None))
    if ids is not None:
        query = query.where(Notification.id.in_(ids))
    result = await session.execute(query.values(read_at=datetime.now(UTC)))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


async def unread_count(session: AsyncSession, user_id: int) -> int:
    query = select(func.count()).where(Notification.user_id == user_id, Notification.read_at.is_(None))
    return int(await session.scalar(query) or 0)


async def set_endpoint(session: AsyncSession, user_id: int, api_key_id: int, url: str, *, active: bool,
                       allow_loopback: bool) -> tuple[WebhookEndpoint, str | None]:  # fmt: skip
    """The webhook endpoint of one of the reader's live API keys, created (with a new secret, returned once) or
    changed. The URL must be well formed (INVALID), http(s), and resolve to public addresses (ADDRESS_REFUSED;
    checked again on every delivery)."""
    key = await session.scalar(select(ApiKey).where(ApiKey.id == api_key_id, ApiKey.user_id == user_id,
                                                    ApiKey.revoked_at.is_(None)))  # fmt: skip
    if key is None:
        raise AlertRejected(AlertErrorCode.NOT_FOUND, "no such API key", "apiKeyId")
    url = _well_formed(url)
    try:
        await check_url_target(url, allow_loopback=allow_loopback)
    except UnusableURL as error:
        raise AlertRejected(AlertErrorCode.INVALID, str(error), "url") from error
    except AddressRefused as error:
        raise AlertRejected(AlertErrorCode.ADDRESS_REFUSED, str(error), "url") from error
    secret = "whsec_" + secrets.token_urlsafe(32)
    statement = insert(WebhookEndpoint).values(api_key_id=api_key_id, user_id=user_id, url=url, secret=secret,
                                               active=active)  # fmt: skip
    created = await session.scalar(statement.on_conflict_do_nothing().returning(WebhookEndpoint.id))
    if created is None:
        await session.execute(update(WebhookEndpoint).where(WebhookEndpoint.api_key_id == api_key_id)
                              .values(url=url, active=active))  # fmt: skip
    endpoint = await session.scalar(select(WebhookEndpoint).where(WebhookEndpoint.api_key_id == api_key_id)
                                    .execution_options(populate_existing=True))  # fmt: skip
    assert endpoint is not None
    return endpoint, secret if created is not None else None


def _well_formed(url: str) -> str:
    """The URL stripped, if it is what a webhook's URL must be beyond a fetchable one (check_url_target): at most
    MAX_URL characters (it is stored and shown), printable ASCII without spaces (anything else percent-encoded, a host
    in its xn-- form), so that what a reader sets is what every delivery sends to."""
    url = url.strip()
    if not 0 < len(url) <= MAX_URL:
        raise AlertRejected(AlertErrorCode.INVALID, f"a URL has 1 to {MAX_URL} characters", "url")
    if not all(" " < character <= "~" for character in url):
        raise AlertRejected(AlertErrorCode.INVALID, "a URL is printable ASCII without spaces (percent-encode the "
                                                    "rest, write a host in its xn-- form)", "url")  # fmt: skip
    return url


async def endpoints_of(session: AsyncSession, user_id: int) -> list[WebhookEndpoint]:
    return list(await session.scalars(select(WebhookEndpoint).where(WebhookEndpoint.user_id == user_id)
                                      .order_by(WebhookEndpoint.id)))  # fmt: skip
