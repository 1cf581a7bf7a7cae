"""sourceCreate: add a feed to crawl; it is due at once, so the next crawl tick fetches it."""

from __future__ import annotations

import strawberry

from app.api.auth import require_source_admin
from app.api.context import Info
from app.api.types.source import OutletKindEnum, SourceNode
from app.places.countries import InvalidRegion
from app.places.outlets import OutletKind
from app.sources.errors import SourceErrorCode, SourceRejected
from app.sources.service import SourceRequest, create_source

SourceErrorCodeEnum = strawberry.enum(SourceErrorCode, name="SourceErrorCode")


def source_error_code(error: SourceRejected | InvalidRegion) -> SourceErrorCode:
    return SourceErrorCode.INVALID_REGION if isinstance(error, InvalidRegion) else error.code


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
    country: str | None = strawberry.field(
        default=None,
        description="Where the outlet is (ISO 3166-1 alpha-2); administrators only. Left out, it is "
        "inferred from the feed's domain and language.",
    )
    outlet_kind: OutletKindEnum | None = strawberry.field(  # type: ignore[valid-type]
        default=None, description="Wire, national, local or international; administrators only."
    )


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
        if (input.country is not None or input.outlet_kind is not None) and not admin:
            raise SourceRejected(SourceErrorCode.FORBIDDEN, "only administrators set an outlet's country and kind",
                                 "country" if input.country is not None else "outletKind")  # fmt: skip
        request = SourceRequest(
            feed_url=input.feed_url, name=input.name, category=input.category, language=input.language,
            authority=0.5 if input.authority is None else input.authority,
            min_interval_minutes=input.min_interval_minutes, max_interval_minutes=input.max_interval_minutes,
            admin_fields=frozenset({"name"} if admin and input.name else ()), country=input.country,
            outlet_kind=OutletKind(input.outlet_kind).value if input.outlet_kind else None,
        )  # fmt: skip
        async with services.db.begin() as session:
            source = await create_source(session, services.settings, request)
    except (SourceRejected, InvalidRegion) as error:
        return SourceCreatePayload(
            source=None,
            errors=[SourceCreateError(code=source_error_code(error), field=error.field, message=str(error))],
        )
    return SourceCreatePayload(source=SourceNode.from_model(source), errors=[])
