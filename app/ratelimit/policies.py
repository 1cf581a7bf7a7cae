"""The budgets, from settings: GitHub-style points per window for API callers, and stricter buckets for the account
operations that cost a password hash or mint a credential. Each charge is one atomic take from a shared bucket."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import Counter
from redis.asyncio import Redis

from app.ratelimit.bucket import TokenBuckets, Verdict
from app.ratelimit.callers import trusted_networks
from app.settings import Settings

REFUSED = Counter("newsagg_rate_limit_refusals", "Requests refused for an empty bucket, by policy", ["policy"])
ACCOUNT_OPERATIONS = ("logIn", "signUp", "apiKeyCreate")


@dataclass(frozen=True, slots=True)
class Policy:
    name: str
    capacity: int  # points a caller may spend at once
    window_s: float  # an empty bucket is full again after this long

    @property
    def per_second(self) -> float:
        return self.capacity / self.window_s


class RateLimits:
    def __init__(self, redis: Redis, settings: Settings) -> None:
        self.enabled = settings.rate_limit_enabled
        self.buckets = TokenBuckets(redis, settings.rate_limit_redis_timeout_seconds)
        self.trusted_proxies = trusted_networks(settings.rate_limit_trusted_proxies)
        window = settings.rate_limit_window_seconds
        self.signed_in = Policy("api", settings.rate_limit_points, window)
        self.anonymous = Policy("api_anonymous", settings.rate_limit_anonymous_points, window)
        self._per_address = settings.account_attempts_per_address
        self._per_account = settings.account_attempts_per_account
        self._account_window = settings.account_attempts_window_seconds

    def account_policies(self, operation: str) -> tuple[Policy, Policy]:
        """`operation`'s buckets per client address and per account (a bucket of each per operation)."""
        window = self._account_window
        per_address = Policy(f"{operation}:address", self._per_address, window)
        return per_address, Policy(f"{operation}:account", self._per_account, window)

    async def charge(self, policy: Policy, caller: str, cost: int, *, dry_run: bool = False) -> Verdict | None:
        """Takes `cost` points from `caller`'s bucket of `policy`. None: unmetered (limits off, or Redis down)."""
        if not self.enabled:
            return None
        key = f"newsagg:rate:{policy.name}:{caller}"
        verdict = await self.buckets.take(key, policy.capacity, policy.per_second, cost, dry_run=dry_run)
        if verdict is not None and not verdict.allowed and not dry_run:
            REFUSED.labels(policy.name.partition(":")[0]).inc()
        return verdict
