"""Domain enums exposed to GraphQL under their own names."""

from __future__ import annotations

import strawberry

from app.sources.models import Circuit, ClaimStatus, SourceKind, SourceStatus

SourceStatusEnum = strawberry.enum(SourceStatus, name="SourceStatus", description="Whether a source is crawled.")
SourceKindEnum = strawberry.enum(SourceKind, name="SourceKind", description="The feed format of a source.")
CrawlClaimEnum = strawberry.enum(ClaimStatus, name="CrawlClaim", description="Waiting, or being fetched now.")
CircuitEnum = strawberry.enum(Circuit, name="Circuit", description="Circuit breaker state of a source's fetches.")
