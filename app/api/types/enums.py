"""Domain enums exposed to GraphQL under their own names."""

from __future__ import annotations

import strawberry

from app.sources.models import Circuit, ClaimStatus, SourceKind, SourceStatus
from app.topics.keywords import Topic

SourceStatusEnum = strawberry.enum(SourceStatus, name="SourceStatus", description="Whether a source is crawled.")
SourceKindEnum = strawberry.enum(SourceKind, name="SourceKind", description="The feed format of a source.")
CrawlClaimEnum = strawberry.enum(ClaimStatus, name="CrawlClaim", description="Waiting, or being fetched now.")
CircuitEnum = strawberry.enum(Circuit, name="Circuit", description="Circuit breaker state of a source's fetches.")
TopicEnum = strawberry.enum(Topic, name="Topic", description="What an article or story is about.")
