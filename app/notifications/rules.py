"""A reader's alert rules (what, when, how often, digest) and the stories they follow: checked, then stored."""

from __future__ import annotations

import zoneinfo
from dataclasses import dataclass, field

from sqlalchemy import delete, select, text
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.notifications.errors import AlertErrorCode, AlertRejected
from app.notifications.models import AlertRules, StoryFollow
from app.places.countries import checked_country
from app.stories.models import StoryCluster
from app.text.language_codes import checked_languages

DIGESTS = ("none", "hourly", "daily")
MAX_ITEMS = 100  # topics, sources or entities in one rule, each counted once (languages: MAX_LANGUAGES, 20)
MAX_CAP = 1000
MINUTES_A_DAY = 24 * 60


@dataclass
class RuleChoice:
    """What a reader asks for; every field is checked by `check`."""

    breaking: bool = True
    story_updates: bool = True
    topics: list[str] = field(default_factory=list)
    source_ids: list[int] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    languages: list[str] = field(default_factory=list)
    region: str | None = None  # ISO 3166-1 alpha-2: only the stories local to that country
    time_zone: str = "UTC"
    quiet_start: int | None = None
    quiet_end: int | None = None
    cap_per_hour: int = 10
    digest: str = "none"


def _invalid(message: str, field_name: str) -> AlertRejected:
    return AlertRejected(AlertErrorCode.INVALID, message, field_name)


def check(choice: RuleChoice) -> RuleChoice:
    """The choice as stored (duplicates gone, entities folded), or AlertRejected naming the field at fault
    (InvalidRegion for a region that is no country code)."""
    for name, argument in (("topics", "topics"), ("source_ids", "sourceIds"), ("entities", "entities")):
        values = list(dict.fromkeys(getattr(choice, name)))
        if len(values) > MAX_ITEMS:
            raise _invalid(f"at most {MAX_ITEMS} {argument}", argument)
        setattr(choice, name, values)
    try:
        choice.languages = list(dict.fromkeys(checked_languages(dict.fromkeys(choice.languages))))
    except ValueError as error:
        raise _invalid(str(error), "languages") from None
    choice.entities = [e.strip().casefold() for e in choice.entities]
    if not all(0 < len(e) <= 200 for e in choice.entities):
        raise _invalid('an entity key has 1 to 200 characters, such as "per:angela merkel"', "entities")
    if not 0 <= choice.cap_per_hour <= MAX_CAP:
        raise _invalid(f"a cap per hour is 0 to {MAX_CAP}", "capPerHour")
    if choice.digest not in DIGESTS:
        raise _invalid("digest is none, hourly or daily", "digest")
    if (choice.quiet_start is None) != (choice.quiet_end is None):
        raise _invalid("quiet hours need both a start and an end", "quietStart")
    for name, minute in (("quietStart", choice.quiet_start), ("quietEnd", choice.quiet_end)):
        if minute is not None and not 0 <= minute < MINUTES_A_DAY:
            raise _invalid("quiet hours are minutes after local midnight, 0 to 1439", name)
    if choice.quiet_start is not None and choice.quiet_start == choice.quiet_end:
        raise _invalid("quiet hours that start when they end are no quiet hours", "quietEnd")
    _check_zone(choice.time_zone)
    if choice.region is not None:
        choice.region = checked_country(choice.region)
    return choice


def _check_zone(name: str) -> None:
    if not 0 < len(name) <= 64 or name.startswith(("/", ".")) or ".." in name:
        raise _invalid("an IANA time zone such as Europe/Paris", "timeZone")
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError) as error:  # OSError: a folder, such as "Europe"
        raise _invalid("an IANA time zone such as Europe/Paris", "timeZone") from error


async def set_rules(session: AsyncSession, user_id: int, choice: RuleChoice) -> AlertRules:
    choice = check(choice)
    known = await session.scalar(text("SELECT count(*) FROM pg_timezone_names WHERE name = :name"),
                                 {"name": choice.time_zone})  # fmt: skip
    if not known:
        raise _invalid("this time zone is not known to the database", "timeZone")
    values = {**choice.__dict__, "updated_at": text("now()")}
    statement = insert(AlertRules).values(user_id=user_id, **values)
    await session.execute(statement.on_conflict_do_update(index_elements=[AlertRules.user_id], set_=values))
    return await rules_of(session, user_id, fresh=True)


async def rules_of(session: AsyncSession, user_id: int, *, fresh: bool = False) -> AlertRules:
    """The reader's rules; a reader who never set any has the defaults (not stored: no alerts)."""
    query = select(AlertRules).where(AlertRules.user_id == user_id)
    found = await session.scalar(query.execution_options(populate_existing=True) if fresh else query)
    return found or AlertRules(user_id=user_id, breaking=False, story_updates=True, topics=[], source_ids=[],
                               entities=[], languages=[], time_zone="UTC", cap_per_hour=10, digest="none")  # fmt: skip


async def follow_story(session: AsyncSession, user_id: int, story_id: int, *, follow: bool) -> None:
    """Following a story alerts the reader when it gains articles; a reader with no rules yet gets rules that alert
    about followed stories only (not every breaking story)."""
    if not follow:
        await session.execute(delete(StoryFollow).where(StoryFollow.user_id == user_id,
                                                        StoryFollow.story_id == story_id))  # fmt: skip
        return
    if await session.get(StoryCluster, story_id) is None:
        raise AlertRejected(AlertErrorCode.NOT_FOUND, "no such story", "id")
    await session.execute(insert(AlertRules).values(user_id=user_id, breaking=False).on_conflict_do_nothing())
    await session.execute(insert(StoryFollow).values(user_id=user_id, story_id=story_id).on_conflict_do_nothing())


async def followed_story_ids(session: AsyncSession, user_id: int) -> list[int]:
    rows = await session.scalars(select(StoryFollow.story_id).where(StoryFollow.user_id == user_id)
                                 .order_by(StoryFollow.created_at.desc()).limit(500))  # fmt: skip
    return list(rows)
