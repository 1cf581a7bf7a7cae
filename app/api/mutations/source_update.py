"""sourceUpdate: change what a source is called, how it is filed, how often it is fetched, whether it is crawled and
(administrators only) its authority, country and outlet kind."""

from __future__ import annotations

import strawberry
from strawberry import relay

from app.api.auth import require_source_admin
from app.api.context import Info
from app.api.mutations.source_create import SourceErrorCodeEnum, source_error_code
from app.api.relay import id_of
from app.api.types.enums import SourceStatusEnum
from app.api.types.source import OutletKindEnum, SourceNode
from app.places.countries import InvalidRegion
from app.places.outlets import OutletKind
from app.sources.errors import SourceRejected
from app.sources.service import SourceChange, change_source


@strawberry.input(description="The fields to change; those left out stay as they are.")
class SourceUpdateInput:
    name: str | None = strawberry.field(
        default=None, description="Set by an administrator, it stays; otherwise the feed's own title replaces it."
    )
    site_url: str | None = strawberry.field(default=None, description="The publisher's site (as `name`).")
    category: str | None = strawberry.field(default=None, description='`""` clears it.')
    language: str | None = strawberry.field(default=None, description='BCP 47 code such as `en`; `""` clears it.')
    authority: float | None = strawberry.field(
        default=None, description="Credibility from 0 to 1; ranks the source's stories. Administrators only."
    )
    min_interval_minutes: float | None = strawberry.field(default=None, description="1 to 43,200.")
    max_interval_minutes: float | None = strawberry.field(default=None, description="1 to 43,200, at least the min.")
    status: SourceStatusEnum | None = strawberry.field(  # type: ignore[valid-type]
        default=None, description="PAUSED stops crawling; ACTIVE resumes it with a fresh start."
    )
    article_text: bool | None = strawberry.field(
        default=None, description="Fetch its articles' pages for their full text (when the feed has only summaries)."
    )
    country: str | None = strawberry.field(
        default=None,
        description='Where the outlet is, ISO 3166-1 alpha-2 (`GB`); `""` hands it back to inference. '
        "Administrators only: it groups the outlet's coverage (`Story.perspectives`) and places it in region feeds.",
    )
    outlet_kind: OutletKindEnum | None = strawberry.field(  # type: ignore[valid-type]
        default=None, description="Wire, national, local, international or unknown. Administrators only."
    )


@strawberry.type(description="Why sourceUpdate changed nothing.")
class SourceUpdateError:
    code: SourceErrorCodeEnum  # type: ignore[valid-type]
    field: str | None
    message: str


@strawberry.type
class SourceUpdatePayload:
    source: SourceNode | None
    errors: list[SourceUpdateError]


async def source_update(info: Info, id: relay.GlobalID, input: SourceUpdateInput) -> SourceUpdatePayload:
    services = info.context.services
    change = SourceChange(
        name=input.name, site_url=input.site_url, category=input.category, language=input.language,
        authority=input.authority, min_interval_minutes=input.min_interval_minutes,
        max_interval_minutes=input.max_interval_minutes, status=input.status, article_text=input.article_text,
        country=input.country, outlet_kind=OutletKind(input.outlet_kind).value if input.outlet_kind else None,
    )  # fmt: skip
    try:
        admin = await require_source_admin(info)
        async with services.db.begin() as session:
            source = await change_source(session, id_of(id, "Source", "id"), change, by_admin=admin)
            node = SourceNode.from_model(source)
    except (SourceRejected, InvalidRegion) as error:
        return SourceUpdatePayload(
            source=None,
            errors=[SourceUpdateError(code=source_error_code(error), field=error.field, message=str(error))],
        )
    return SourceUpdatePayload(source=node, errors=[])
