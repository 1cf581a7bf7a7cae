"""Business rules for adding sources (a normalized, fetchable, public URL, sane bounds, once), changing them and
asking for a fetch now."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncSession

from app.ingest.addresses import AddressRefused, UnusableURL, check_url_target, url_target
from app.ingest.urls import InvalidUrl, normalize_url
from app.places.countries import checked_country
from app.places.outlets import infer
from app.settings import Settings
from app.sources import repository, rules
from app.sources.errors import SourceErrorCode, SourceRejected
from app.sources.models import Source, SourceStatus
from app.throttle import once_per


@dataclass(frozen=True, slots=True)
class SourceRequest:
    feed_url: str
    name: str | None = None
    site_url: str | None = None
    category: str | None = None
    language: str | None = None
    authority: float = 0.5
    min_interval_minutes: float | None = None
    max_interval_minutes: float | None = None
    admin_fields: frozenset[str] = frozenset()  # of name, site_url: an administrator chose them, the feed may not
    country: str | None = None  # ISO 3166-1 alpha-2; with outlet_kind, None: inferred (app/places/outlets.py)
    outlet_kind: str | None = None


async def create_source(
    session: AsyncSession,
    settings: Settings,
    request: SourceRequest,
    *,
    existing_ok: bool = False,
    resolve: bool = True,
) -> Source:
    """`resolve=False` skips the DNS lookup (trusted lists loaded offline); every fetch still checks the address
    it connects to."""
    feed_url = _checked_url(request.feed_url)
    try:
        if resolve:
            await check_url_target(feed_url, allow_loopback=settings.allow_loopback_sources)
        else:
            url_target(feed_url)  # no DNS, but a URL the fetcher could never use is refused all the same
    except UnusableURL as error:
        raise SourceRejected(SourceErrorCode.INVALID_URL, str(error), "feedUrl") from error
    except AddressRefused as error:
        raise SourceRejected(SourceErrorCode.ADDRESS_REFUSED, str(error), "feedUrl") from error
    min_s, max_s = rules.interval_seconds(
        _given(request.min_interval_minutes, settings.crawl_min_interval_minutes),
        _given(request.max_interval_minutes, settings.crawl_max_interval_minutes),
        settings.crawl_interval_floor_seconds / 60,
    )
    country, outlet_kind, outlet_inferred = _outlet_of(request, feed_url)
    new = repository.NewSource(
        feed_url=feed_url,
        name=rules.checked_name(" ".join((request.name or feed_url).split())[: rules.MAX_NAME]),
        site_url=request.site_url,
        category=rules.checked_category(request.category),
        language=rules.checked_language(request.language),
        authority=rules.checked_authority(request.authority),
        min_interval_s=min_s,
        max_interval_s=max_s,
        admin_fields=sorted(request.admin_fields),
        country=country,
        outlet_kind=outlet_kind,
        outlet_inferred=outlet_inferred,
    )
    source = await repository.insert_source(session, new)
    if source is not None:
        return source
    existing = await repository.source_by_feed_url(session, feed_url)
    if existing is None or not existing_ok:
        raise SourceRejected(SourceErrorCode.DUPLICATE, f"{feed_url} is already a source", "feedUrl")
    return existing


def _outlet_of(request: SourceRequest, feed_url: str) -> tuple[str | None, str, bool]:
    """(country, kind, inferred): what a list or an administrator said of the outlet, else what its addresses and
    language suggest."""
    inferred = infer(request.site_url, feed_url, request.language)
    if request.country is None and request.outlet_kind is None:
        return inferred.country, inferred.kind.value, True
    country = checked_country(request.country, "country") if request.country is not None else inferred.country
    kind = rules.checked_outlet_kind(request.outlet_kind) if request.outlet_kind is not None else inferred.kind.value
    return country, kind, False


def _given(value: float | None, default: float) -> float:
    return default if value is None else value


def _checked_url(raw: str, field: str = "feedUrl") -> str:
    try:
        return normalize_url(raw)
    except InvalidUrl as error:
        raise SourceRejected(SourceErrorCode.INVALID_URL, str(error), field) from error


async def request_refresh(
    session: AsyncSession, redis: Redis, settings: Settings, source_id: int
) -> tuple[Source, bool]:
    """(the source, whether the caller must enqueue its refresh now). A paused or dead source is reactivated;
    one already being fetched is left to that fetch. Throttled per source."""
    source = await session.get(Source, source_id)
    if source is None:
        raise SourceRejected(SourceErrorCode.NOT_FOUND, "no such source", "id")
    wait = await once_per(redis, f"refresh:{source_id}", settings.source_refresh_throttle_seconds)
    if wait:
        raise SourceRejected(SourceErrorCode.THROTTLED, f"refreshed recently; try again in {wait} s", "id", wait)
    if source.status != SourceStatus.ACTIVE:
        await repository.reactivate(session, source_id)
        source.status = SourceStatus.ACTIVE
    return source, await repository.claim_one(session, source_id, now=datetime.now(UTC))


@dataclass(frozen=True, slots=True)
class SourceChange:
    """The fields to change (None: left as they are)."""

    name: str | None = None
    site_url: str | None = None
    category: str | None = None  # "" clears it
    language: str | None = None  # "" clears it
    authority: float | None = None
    min_interval_minutes: float | None = None
    max_interval_minutes: float | None = None
    status: SourceStatus | None = None  # active (resumed with a fresh start) or paused
    article_text: bool | None = None  # fetch its articles' pages for their text
    country: str | None = None  # ISO 3166-1 alpha-2; "" returns the outlet to inference (administrators only)
    outlet_kind: str | None = None  # wire, national, local, international, unknown (administrators only)


async def change_source(session: AsyncSession, source_id: int, change: SourceChange, *, by_admin: bool) -> Source:
    """Applies `change` whole or not at all. Authority ranks a source's stories everywhere: administrators only. A
    name or site URL an administrator sets is theirs from then on; anyone else's is the feed's to replace."""
    source = await session.get(Source, source_id, with_for_update=True)
    if source is None:
        raise SourceRejected(SourceErrorCode.NOT_FOUND, "no such source", "id")
    if change.authority is not None and not by_admin:
        raise SourceRejected(SourceErrorCode.FORBIDDEN, "only administrators set a source's authority", "authority")
    if (change.country is not None or change.outlet_kind is not None) and not by_admin:
        raise SourceRejected(SourceErrorCode.FORBIDDEN, "only administrators set an outlet's country and kind",
                             "country" if change.country is not None else "outletKind")  # fmt: skip
    values = _checked_change(source, change)
    values.update(_outlet_change(source, change, values))
    if by_admin:
        chosen = {"name", "site_url"} & set(values)
        values["admin_fields"] = sorted(set(source.admin_fields) | chosen)
    if change.status is SourceStatus.ACTIVE and source.status is not SourceStatus.ACTIVE:
        await repository.reactivate(session, source_id)
    for column, value in values.items():
        setattr(source, column, value)
    await session.flush()
    return source


def _outlet_change(source: Source, change: SourceChange, values: dict[str, object]) -> dict[str, object]:
    """An administrator's country or kind is theirs (never replaced by inference); `country=""` hands the outlet back
    to inference, which follows a new site URL or language while nobody has set the outlet."""
    site_url = str(values.get("site_url", source.site_url) or "") or None
    language = values.get("language", source.language)
    inferred = infer(site_url, source.feed_url, language if isinstance(language, str) else None)
    if change.country == "":
        return {"country": inferred.country, "outlet_kind": inferred.kind.value, "outlet_inferred": True}
    if change.country is not None or change.outlet_kind is not None:
        set_country = checked_country(change.country, "country") if change.country is not None else source.country
        kind = rules.checked_outlet_kind(change.outlet_kind) if change.outlet_kind is not None else source.outlet_kind
        return {"country": set_country, "outlet_kind": kind, "outlet_inferred": False}
    if source.outlet_inferred and ("site_url" in values or "language" in values):
        return {"country": inferred.country, "outlet_kind": inferred.kind.value}
    return {}


def _checked_change(source: Source, change: SourceChange) -> dict[str, object]:
    values: dict[str, object] = {}
    if change.name is not None:
        values["name"] = rules.checked_name(change.name)
    if change.site_url is not None:
        values["site_url"] = _checked_url(change.site_url, "siteUrl")
    if change.category is not None:
        values["category"] = rules.checked_category(change.category)
    if change.language is not None:
        values["language"] = rules.checked_language(change.language)
    if change.authority is not None:
        values["authority"] = rules.checked_authority(change.authority)
    if change.min_interval_minutes is not None or change.max_interval_minutes is not None:
        low = _given(change.min_interval_minutes, source.min_interval_s / 60)
        high = _given(change.max_interval_minutes, source.max_interval_s / 60)
        values["min_interval_s"], values["max_interval_s"] = rules.interval_seconds(low, high)
    if change.status is not None:
        if change.status not in (SourceStatus.ACTIVE, SourceStatus.PAUSED):
            raise SourceRejected(SourceErrorCode.INVALID, "a source is set active or paused", "status")
        values["status"] = change.status
    if change.article_text is not None:
        values["article_text"] = change.article_text
    return values
