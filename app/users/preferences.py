"""What a reader follows, mutes and reads in: topics and sources followed, sources muted, preferred languages, and
where they are (a home region: local stories rank higher).
Every change is idempotent: following twice is following once."""

from __future__ import annotations

from sqlalchemy import delete, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.places.countries import checked_country
from app.sources.models import Source
from app.text.language_codes import checked_languages
from app.users.errors import AccountErrorCode, AccountRejected
from app.users.models import SourceFollow, SourceMute, TopicFollow, User


async def set_topic(session: AsyncSession, user_id: int, topic: str, *, follow: bool) -> None:
    if follow:
        await session.execute(insert(TopicFollow).values(user_id=user_id, topic=topic).on_conflict_do_nothing())
    else:
        await session.execute(delete(TopicFollow).where(TopicFollow.user_id == user_id, TopicFollow.topic == topic))


async def set_source(session: AsyncSession, user_id: int, source_id: int, *, table: type[SourceFollow | SourceMute],
                     on: bool) -> None:  # fmt: skip
    if not on:
        await session.execute(delete(table).where(table.user_id == user_id, table.source_id == source_id))
        return
    if await session.get(Source, source_id) is None:
        raise AccountRejected(AccountErrorCode.NOT_FOUND, "no such source", "sourceId")
    await session.execute(insert(table).values(user_id=user_id, source_id=source_id).on_conflict_do_nothing())


async def set_languages(session: AsyncSession, user_id: int, languages: list[str]) -> list[str]:
    """The languages as stored: ISO 639 codes, lower case, each once, in the reader's order; INVALID_LANGUAGE for
    anything else (nothing is stored)."""
    try:
        codes = list(dict.fromkeys(checked_languages(languages)))
    except ValueError as error:
        raise AccountRejected(AccountErrorCode.INVALID_LANGUAGE, str(error), "languages") from None
    await session.execute(update(User).where(User.id == user_id).values(preferred_languages=codes))
    return codes


async def set_home_region(session: AsyncSession, user_id: int, region: str | None) -> str | None:
    """The region as stored: an ISO 3166-1 alpha-2 code in upper case, or None to clear it; InvalidRegion for
    anything else ("UK", "England"; nothing is stored)."""
    code = None if region is None else checked_country(region)
    await session.execute(update(User).where(User.id == user_id).values(home_region=code))
    return code


async def followed_topics(session: AsyncSession, user_id: int) -> list[str]:
    rows = await session.scalars(select(TopicFollow.topic).where(TopicFollow.user_id == user_id)
                                 .order_by(TopicFollow.topic))  # fmt: skip
    return list(rows)


async def sources_of(session: AsyncSession, user_id: int, table: type[SourceFollow | SourceMute]) -> list[Source]:
    rows = await session.scalars(select(Source).join(table, table.source_id == Source.id)
                                 .where(table.user_id == user_id).order_by(Source.name, Source.id))  # fmt: skip
    return list(rows)


async def source_ids_of(session: AsyncSession, user_id: int, table: type[SourceFollow | SourceMute]) -> list[int]:
    """The ids of `sources_of`, in no particular order: no join, no sort."""
    return list(await session.scalars(select(table.source_id).where(table.user_id == user_id)))
