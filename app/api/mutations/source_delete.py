"""sourceDelete: a source and every article of it, removed a batch at a time with its stories kept whole
(app/sources/removal.py). Administrators only, even where source management is open."""

from __future__ import annotations

import strawberry
from strawberry import relay

from app.api.auth import require_source_admin
from app.api.context import Info
from app.api.mutations.source_create import SourceErrorCodeEnum
from app.api.relay import id_of
from app.sources.errors import SourceRejected
from app.sources.removal import delete_source


@strawberry.type(description="Why sourceDelete deleted nothing.")
class SourceDeleteError:
    code: SourceErrorCodeEnum  # type: ignore[valid-type]
    field: str | None
    message: str


@strawberry.type
class SourceDeletePayload:
    deleted_source_id: relay.GlobalID | None = strawberry.field(description="The id of the source now gone.")
    articles_deleted: int = strawberry.field(description="Its articles, deleted with it.")
    stories_changed: int = strawberry.field(description="Stories that lost articles (emptied ones included).")
    stories_emptied: int = strawberry.field(description="Stories left without an article: gone from every read.")
    errors: list[SourceDeleteError]


async def source_delete(info: Info, id: relay.GlobalID) -> SourceDeletePayload:
    services = info.context.services
    try:
        await require_source_admin(info, even_when_open=True)
        source_id = id_of(id, "Source", "id")
        removal = await delete_source(services.engine, source_id, batch=services.settings.source_delete_batch)
    except SourceRejected as error:
        problem = SourceDeleteError(code=error.code, field=error.field, message=str(error))
        return SourceDeletePayload(deleted_source_id=None, articles_deleted=0, stories_changed=0, stories_emptied=0,
                                   errors=[problem])  # fmt: skip
    return SourceDeletePayload(deleted_source_id=id, articles_deleted=removal.articles,
                               stories_changed=len(removal.stories), stories_emptied=removal.emptied,
                               errors=[])  # fmt: skip
