"""topicFollow, topicUnfollow, sourceFollow, sourceUnfollow, sourceMute, sourceUnmute, preferredLanguagesSet,
homeRegionSet: a signed-in reader's own choices (never anyone else's)."""

from __future__ import annotations

from typing import Annotated

import strawberry
from strawberry import relay

from app.api.auth import require_viewer
from app.api.context import Info
from app.api.relay import id_of
from app.api.types.account_error import AccountError, refused
from app.api.types.enums import TopicEnum
from app.api.types.viewer import Viewer
from app.feed import versions
from app.places.countries import InvalidRegion
from app.topics.keywords import Topic
from app.users import preferences
from app.users.errors import AccountRejected
from app.users.models import SourceFollow, SourceMute, User


@strawberry.type(description="The account after the change.")
class ViewerPayload:
    viewer: Viewer | None
    errors: list[AccountError]


def _after(user: User) -> ViewerPayload:
    """Follows and mutes are read by the viewer's own fields; the user row itself is as the request loaded it."""
    return ViewerPayload(viewer=Viewer.from_model(user), errors=[])


async def _topic(info: Info, topic: TopicEnum, follow: bool) -> ViewerPayload:  # type: ignore[valid-type]
    user = await require_viewer(info)
    async with info.context.services.db.begin() as session:
        await preferences.set_topic(session, user.id, Topic(topic).value, follow=follow)
    await versions.bump(info.context.services.redis, user.id)
    return _after(user)


async def _source(info: Info, source_id: relay.GlobalID, table: type[SourceFollow | SourceMute],
                  on: bool) -> ViewerPayload:  # fmt: skip
    user = await require_viewer(info)
    try:
        async with info.context.services.db.begin() as session:
            await preferences.set_source(session, user.id, id_of(source_id, "Source", "sourceId"), table=table, on=on)
    except AccountRejected as error:
        return ViewerPayload(viewer=None, errors=refused(error))
    await versions.bump(info.context.services.redis, user.id)
    return _after(user)


async def topic_follow(info: Info, topic: TopicEnum) -> ViewerPayload:  # type: ignore[valid-type]
    return await _topic(info, topic, True)


async def topic_unfollow(info: Info, topic: TopicEnum) -> ViewerPayload:  # type: ignore[valid-type]
    return await _topic(info, topic, False)


async def source_follow(info: Info, source_id: relay.GlobalID) -> ViewerPayload:
    return await _source(info, source_id, SourceFollow, True)


async def source_unfollow(info: Info, source_id: relay.GlobalID) -> ViewerPayload:
    return await _source(info, source_id, SourceFollow, False)


async def source_mute(info: Info, source_id: relay.GlobalID) -> ViewerPayload:
    return await _source(info, source_id, SourceMute, True)


async def source_unmute(info: Info, source_id: relay.GlobalID) -> ViewerPayload:
    return await _source(info, source_id, SourceMute, False)


async def preferred_languages_set(info: Info, languages: list[str]) -> ViewerPayload:
    user = await require_viewer(info)
    try:
        async with info.context.services.db.begin() as session:
            codes = await preferences.set_languages(session, user.id, languages)
    except AccountRejected as error:
        return ViewerPayload(viewer=None, errors=refused(error))
    await versions.bump(info.context.services.redis, user.id)
    user.preferred_languages = codes  # this request's copy of the account, now as stored
    return _after(user)


async def home_region_set(
    info: Info,
    region: Annotated[str | None, strawberry.argument(description="ISO 3166-1 alpha-2 (`DE`); null clears it.")],
) -> ViewerPayload:
    user = await require_viewer(info)
    try:
        async with info.context.services.db.begin() as session:
            code = await preferences.set_home_region(session, user.id, region)
    except InvalidRegion as error:
        return ViewerPayload(viewer=None, errors=refused(error))
    await versions.bump(info.context.services.redis, user.id)
    user.home_region = code
    return _after(user)
