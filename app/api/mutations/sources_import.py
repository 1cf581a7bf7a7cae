"""sourcesImport: add every feed of an OPML document; refusals are listed, the rest still goes in."""

from __future__ import annotations

import strawberry

from app.api.auth import require_source_admin
from app.api.context import Info
from app.api.mutations.source_create import SourceErrorCodeEnum
from app.api.types.source import SourceNode
from app.sources.errors import SourceErrorCode, SourceRejected
from app.sources.opml import OpmlError, UnsafeXml
from app.sources.portability import import_opml


@strawberry.type(description="A feed of the document that was not added, or why the document was refused.")
class SourcesImportError:
    code: SourceErrorCodeEnum  # type: ignore[valid-type]
    feed_url: str | None
    message: str


@strawberry.type
class SourcesImportPayload:
    created: list[SourceNode]
    existing_count: int = strawberry.field(description="Feeds that were already sources.")
    errors: list[SourcesImportError]


async def sources_import(info: Info, opml: str) -> SourcesImportPayload:
    services = info.context.services
    try:
        admin = await require_source_admin(info)
        async with services.db.begin() as session:
            report = await import_opml(session, services.settings, opml.encode(), authority=admin)
    except OpmlError as error:
        code = SourceErrorCode.UNSAFE_XML if isinstance(error, UnsafeXml) else SourceErrorCode.INVALID
        return _refused(SourceRejected(code, str(error), "opml"))
    except SourceRejected as error:
        return _refused(error)
    return SourcesImportPayload(
        created=[SourceNode.from_model(s) for s in report.created],
        existing_count=report.existing,
        errors=[SourcesImportError(code=e.code, feed_url=url, message=str(e)) for url, e in report.rejected],
    )


def _refused(error: SourceRejected) -> SourcesImportPayload:
    return SourcesImportPayload(
        created=[], existing_count=0, errors=[SourcesImportError(code=error.code, feed_url=None, message=str(error))]
    )
