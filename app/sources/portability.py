"""Sources in and out as OPML, and the default list a new installation starts with."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from importlib import resources

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.places.countries import InvalidRegion, checked_country
from app.places.outlets import OutletKind
from app.settings import Settings
from app.sources import rules
from app.sources.errors import SourceErrorCode, SourceRejected
from app.sources.models import Source
from app.sources.opml import OpmlFeed, read_opml, write_opml
from app.sources.service import SourceRequest, create_source

log = logging.getLogger(__name__)
MAX_OPML_FEEDS = 10_000


@dataclass
class ImportReport:
    created: list[Source] = field(default_factory=list)
    existing: int = 0
    rejected: list[tuple[str, SourceRejected]] = field(default_factory=list)


async def import_opml(
    session: AsyncSession, settings: Settings, document: bytes, *, resolve: bool = True, authority: bool = True
) -> ImportReport:
    """Every feed of the document becomes a source, once; refusals are reported, not fatal. Without `authority`
    (an importer who is not an administrator) the document's `authority` attributes are ignored: 0.5 for all.
    Titles name the sources until their feeds are fetched; then the feeds' own titles do."""
    feeds = read_opml(document)
    if len(feeds) > MAX_OPML_FEEDS:
        raise SourceRejected(SourceErrorCode.INVALID, f"more than {MAX_OPML_FEEDS} feeds in one import", "opml")
    report = ImportReport()
    for feed in feeds:
        request = SourceRequest(
            feed_url=feed.feed_url, name=feed.title, site_url=feed.site_url, category=_category(feed.category),
            language=_language(feed.language),
            authority=feed.authority if feed.authority is not None and authority else 0.5,
            country=_country(feed.country), outlet_kind=_outlet_kind(feed.outlet_kind),
        )  # fmt: skip
        try:
            async with session.begin_nested():  # one refused feed does not undo the others
                report.created.append(await create_source(session, settings, request, resolve=resolve))
        except SourceRejected as error:
            if error.code is SourceErrorCode.DUPLICATE:
                report.existing += 1
            else:
                report.rejected.append((feed.feed_url, error))
    return report


def _category(folder: str | None) -> str | None:
    """A list's folder names are free text: one line, cut to a category's length."""
    category = " ".join((folder or "").split())[: rules.MAX_CATEGORY]
    return category or None


def _language(code: str | None) -> str | None:
    """A list's language attribute is kept when it is a code, dropped otherwise ("English"): not worth the feed."""
    try:
        return rules.checked_language(code)
    except SourceRejected:
        return None


def _country(code: str | None) -> str | None:
    """A list's country is kept when it is an ISO 3166-1 alpha-2 code; otherwise the outlet's is inferred."""
    try:
        return checked_country(code, "country") if code else None
    except InvalidRegion:
        return None


def _outlet_kind(kind: str | None) -> str | None:
    known = {k.value for k in OutletKind} - {OutletKind.UNKNOWN.value}
    return kind.strip().lower() if kind and kind.strip().lower() in known else None


async def export_opml(session: AsyncSession) -> str:
    sources = await session.scalars(select(Source).order_by(Source.id))
    return write_opml([
        OpmlFeed(feed_url=s.feed_url, title=s.name, site_url=s.site_url, category=s.category, language=s.language,
                 authority=s.authority, country=None if s.outlet_inferred else s.country,
                 outlet_kind=None if s.outlet_inferred or s.outlet_kind == "unknown" else s.outlet_kind)
        for s in sources
    ])  # fmt: skip


def default_sources_opml() -> bytes:
    return resources.files("app.sources").joinpath("default_sources.opml").read_bytes()


async def load_default_sources(session: AsyncSession, settings: Settings) -> int:
    """On a database without sources, add the shipped list; returns how many were added."""
    if await session.scalar(select(func.count()).select_from(Source)):
        return 0
    report = await import_opml(session, settings, default_sources_opml(), resolve=False)
    log.info("no sources yet: added the %d default sources", len(report.created))
    return len(report.created)
