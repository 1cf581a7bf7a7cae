"""sourceRefresh: fetch a source now (a paused or dead one gets a fresh start); at most once a minute."""

from __future__ import annotations

import strawberry
from strawberry import relay

from app.api.auth import require_source_admin
from app.api.context import Info
from app.api.mutations.source_create import SourceErrorCodeEnum
from app.api.relay import id_of
from app.api.types.source import SourceNode
from app.ingest.refresh_jobs import follow_up_job_id
from app.queue_names import REFRESH_SOURCE
from app.sources.errors import SourceRejected
from app.sources.service import request_refresh


@strawberry.type(description="Why sourceRefresh did not start a fetch.")
class SourceRefreshError:
    code: SourceErrorCodeEnum  # type: ignore[valid-type]
    message: str
    retry_after_seconds: int | None = strawberry.field(description="For THROTTLED: when to ask again.")


@strawberry.type
class SourceRefreshPayload:
    source: SourceNode | None
    queued: bool = strawberry.field(description="False when a fetch of this source was already under way.")
    errors: list[SourceRefreshError]


async def source_refresh(info: Info, id: relay.GlobalID) -> SourceRefreshPayload:
    services = info.context.services
    try:
        await require_source_admin(info)
        async with services.db.begin() as session:
            source, queued = await request_refresh(
                session, services.redis, services.settings, id_of(id, "Source", "id")
            )
    except SourceRejected as error:
        problem = SourceRefreshError(code=error.code, message=str(error), retry_after_seconds=error.retry_after_s)
        return SourceRefreshPayload(source=None, queued=False, errors=[problem])
    if queued:  # after the claim has committed
        await info.context.queue.enqueue(REFRESH_SOURCE, source.id, _job_id=follow_up_job_id(source.id, None))
    return SourceRefreshPayload(source=SourceNode.from_model(source), queued=queued, errors=[])
