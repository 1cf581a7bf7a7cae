"""Places as the API shows them: an article's, a story's countries and regions, and a story's perspectives (its
outlets grouped by country and kind)."""

from __future__ import annotations

import strawberry

from app.api.context import Info
from app.api.types.source import OutletKindEnum, SourceNode
from app.places.countries import country_names
from app.places.perspectives import OutletGroup, StoryPerspectives
from app.places.repository import PlaceMention


@strawberry.type(description="A place an article names, resolved to its country (and region where known).")
class Place:
    name: str = strawberry.field(description="As written (on a story: the most common name of the country's places).")
    country: str = strawberry.field(description="ISO 3166-1 alpha-2 code.")
    country_name: str
    region: str | None = strawberry.field(description="ISO 3166-2 code where known (US states, UK nations).")
    mentions: int = strawberry.field(
        description="On an article: times named in headline and summary. On a story: articles naming a place there "
        "(copies not counted)."
    )

    @classmethod
    def of(cls, place: PlaceMention) -> Place:
        named = country_names().get(place.country, place.country)
        return cls(name=place.name, country=place.country, country_name=named,
                   region=place.region, mentions=place.mentions)  # fmt: skip


@strawberry.type(description="Outlets of one group covering a story, with how many articles they wrote.")
class PerspectiveGroup:
    country: str | None = strawberry.field(description="ISO 3166-1 alpha-2; null: the outlets' country is unknown.")
    country_name: str | None
    outlet_kind: OutletKindEnum | None = strawberry.field(  # type: ignore[valid-type]
        description="Null in `byCountry` (every kind)."
    )
    outlet_count: int
    article_count: int = strawberry.field(description="Their articles in the story, copies included.")
    source_ids: strawberry.Private[list[int]]

    @strawberry.field(description="The outlets of the group.")
    async def sources(self, info: Info) -> list[SourceNode]:
        rows = await info.context.loaders.source_by_id.load_many(self.source_ids)
        return [SourceNode.from_model(row) for row in rows if row is not None]

    @classmethod
    def of(cls, group: OutletGroup, *, kind: bool = True, country: bool = True) -> PerspectiveGroup:
        code = group.country if country else None
        return cls(country=code, country_name=country_names().get(code) if code else None,
                   outlet_kind=group.kind if kind else None, outlet_count=len(group.source_ids),
                   article_count=group.articles, source_ids=group.source_ids)  # fmt: skip


@strawberry.type(
    description="Who covered a story from where: its outlets grouped by country and kind (wire, national, local, "
    "international), as set in OPML or by an administrator, else inferred. Each list: the most outlets first."
)
class Perspectives:
    groups: list[PerspectiveGroup] = strawberry.field(description="By country and kind together.")
    by_country: list[PerspectiveGroup] = strawberry.field(description="By country (`outletKind` null).")
    by_kind: list[PerspectiveGroup] = strawberry.field(description="By kind (`country` null).")
    outlet_count: int

    @classmethod
    def of(cls, found: StoryPerspectives) -> Perspectives:
        return cls(
            groups=[PerspectiveGroup.of(g) for g in found.groups],
            by_country=[PerspectiveGroup.of(g, kind=False) for g in found.by_country],
            by_kind=[PerspectiveGroup.of(g, country=False) for g in found.by_kind],
            outlet_count=sum(len(g.source_ids) for g in found.groups),
        )
