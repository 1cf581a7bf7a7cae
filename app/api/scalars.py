"""Scalars GraphQL lacks: BigInt for 64-bit values (GraphQL Int is 32-bit), as a decimal string."""

from __future__ import annotations

from typing import NewType

import strawberry
from strawberry.types.scalar import ScalarDefinition

BigInt = NewType("BigInt", int)

SCALARS: dict[object, ScalarDefinition] = {
    BigInt: strawberry.scalar(
        name="BigInt",
        serialize=lambda value: str(value),
        parse_value=lambda value: int(value),
        description="A signed 64-bit integer, serialized as a decimal string so JavaScript loses no precision.",
    )
}
