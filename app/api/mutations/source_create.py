"""sourceCreate: add a feed to crawl; it is due at once, so the next crawl tick fetches it."""

from __future__ import annotations

import strawberry

from app.api.auth import require_source_admin
from app.api.context import Info
from app.api.types.source import SourceNode
from app.sources.errors import SourceErrorCode, SourceRejected
from app.sources.service import SourceRequest, create_source

SourceErrorCodeEnum = strawberry.enum(SourceErrorCode, name="SourceErrorCode")


@strawberry.input(description="A feed to crawl.")
class SourceCreateInput:
    feed_url: str = strawberry.field(description="RSS, Atom or JSON Feed URL (http or https, public address).")
    name: str | None = None
    category: str | None = None
    language: str | None = strawberry.field(default=None, description="BCP 47 code such as `en`, when known.")
    authority: float | None = strawberry.field(
        default=None, description="Credibility from 0 to 1 (default 0.5); administrators only."
    )
    min_interval_minutes: float | None = strawberry.field(default=None, description="Lower crawl-interval bound.")
    max_interval_minutes: float | None = strawberry.field(default=None, description="Upper crawl-interval bound.")


@strawberry.type(description="Why sourceCreate refused its input.")
class SourceCreateError:
    code: SourceErrorCodeEnum  # type: ignore[valid-type]
    field: str | None
    message: str


@strawberry.type
class SourceCreatePayload:
    source: SourceNode | None
    errors: list[SourceCreateError]


async def source_create(info: Info, input: SourceCreateInput) -> SourceCreatePayload:
    services = info.context.services
    try:
        admin = await require_source_admin(info)
        if input.authority is not None and not admin:
            raise SourceRejected(SourceErrorCode.FORBIDDEN, "only administrators set a source's authority", "authority")
        request = SourceRequest(
            feed_url=input.feed_url, name=input.name, category=input.category, language=input.language,
            authority=0.5 if input.authority is None else input.authority,
            min_interval_minutes=input.min_interval_minutes, max_interval_minutes=input.max_interval_minutes,
            admin_fields=frozenset({"name"} if admin and input.name else ()),
        )  # fmt: skip
        async with services.db.begin() as session:
            source = await create_source(session, services.settings, request)
    except SourceRejected as error:
        return SourceCreatePayload(
            source=None, errors=[SourceCreateError(code=error.code, field=error.field, message=str(error))]
        )
    return SourceCreatePayload(source=SourceNode.from_model(source), errors=[])
