"""Named entities as the API shows them: on an article, on a story, and trending."""

from __future__ import annotations

import enum

import strawberry

from app.entities.repository import NamedEntity


@strawberry.enum(name="EntityKind", description="What a named entity is.")
class EntityKind(enum.Enum):
    PERSON = "PER"
    ORGANIZATION = "ORG"
    PLACE = "LOC"


@strawberry.type(name="Entity", description="A person, organisation or place an article names in its headline or "
                                            "summary.")  # fmt: skip
class EntityNode:
    key: str = strawberry.field(description="Stable identity: kind and folded name (`per:angela merkel`).")
    name: str = strawberry.field(description="As written (on a story or a trend: the most common spelling).")
    kind: EntityKind
    mentions: int = strawberry.field(
        description="On an article: times named in headline and summary. On a story or trend: articles naming it."
    )
    role: str | None = strawberry.field(description="A person's role as the text gives it (`president`), if any.")

    @classmethod
    def of(cls, entity: NamedEntity) -> EntityNode:
        return cls(key=entity.key, name=entity.name, kind=EntityKind(entity.kind), mentions=entity.mentions,
                   role=entity.role)  # fmt: skip
