"""Scalars GraphQL lacks: BigInt for 64-bit values (GraphQL Int is 32-bit), as a decimal string; DateTime, which the
database can compare: with its UTC offset, in years 1 to 9999 once in UTC."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import NewType

import strawberry
from strawberry.types.scalar import ScalarDefinition

from graphql import GraphQLError

BigInt = NewType("BigInt", int)


def instant(text: object) -> datetime | None:
    """`text` as a moment in UTC, or None when it is not an ISO 8601 date and time with an offset, in range."""
    try:
        moment = datetime.fromisoformat(text) if isinstance(text, str) else None
        return moment.astimezone(UTC) if moment is not None and moment.tzinfo is not None else None
    except (ValueError, OverflowError):
        return None


def _parse_datetime(value: object) -> datetime:
    moment = instant(value)
    if moment is None:
        raise GraphQLError("DateTime must be an ISO 8601 date and time with its UTC offset, such as "
                           "2024-05-01T12:00:00Z, between the years 1 and 9999")  # fmt: skip
    return moment


SCALARS: dict[object, ScalarDefinition] = {
    BigInt: strawberry.scalar(
        name="BigInt",
        serialize=lambda value: str(value),
        parse_value=lambda value: int(value),
        description="A signed 64-bit integer, serialized as a decimal string so JavaScript loses no precision.",
    ),
    datetime: strawberry.scalar(
        name="DateTime",
        serialize=datetime.isoformat,
        parse_value=_parse_datetime,
        description="Date with time (ISO 8601, with its UTC offset).",
    ),
}
