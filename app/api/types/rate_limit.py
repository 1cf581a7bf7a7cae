"""`rateLimit`: the caller's points budget as GitHub's GraphQL API reports it."""

from __future__ import annotations

from datetime import datetime

import strawberry

from app.api.context import Info
from app.api.rate_limit import VERDICT
from app.ratelimit.bucket import Verdict


@strawberry.type(description="The caller's points budget: what this query cost and what is left of the window's.")
class RateLimit:
    limit: int = strawberry.field(description="Points this caller may spend per window.")
    cost: int = strawberry.field(
        description="Points this query costs: connections requested / 100 (min 1), or its "
        "nodes / 100 (by default), rounded up, if more."
    )
    remaining: int = strawberry.field(description="Points left after this query.")
    used: int = strawberry.field(description="Points spent and not yet refilled.")
    reset_at: datetime = strawberry.field(description="When the budget is whole again if nothing more is spent.")


def rate_limit(info: Info, dry_run: bool = False) -> RateLimit | None:
    """The budget after this query (`dryRun`: the query is only priced, and nothing else of it runs); null when
    requests are not metered (rate limits off, or Redis unreachable)."""
    verdict: Verdict | None = info.context.extra.get(VERDICT)
    if verdict is None:
        return None
    return RateLimit(limit=verdict.capacity, cost=verdict.cost, remaining=verdict.remaining, used=verdict.used,
                     reset_at=verdict.reset_at)  # fmt: skip
