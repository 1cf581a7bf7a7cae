"""Points budgets at the GraphQL edge: each operation is charged its cost before it runs, to the bucket of its
caller (API key, signed-in user, else client address); over budget it is refused with RATE_LIMITED, over HTTP as a
429 with Retry-After. Every HTTP answer carries GitHub's `x-ratelimit-*` headers."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator

from starlette.responses import Response
from strawberry.extensions import SchemaExtension
from strawberry.types import ExecutionContext

from app.api import auth
from app.api.context import Context
from app.api.dry_run import dry_run_document
from app.api.errors import BadRequest
from app.ratelimit.bucket import Verdict
from app.ratelimit.callers import client_address
from app.ratelimit.policies import Policy
from app.users.service import API_KEY_PREFIX, digest

VERDICT = "rate_limit"  # Context.extra: this operation's verdict (None: unmetered)


class RateLimiter(SchemaExtension):
    """One per request. Its charge comes after validation, where the query's cost is computed (`query_cost`); a
    document that never runs (it failed to parse or validate) is charged 1 point and never refused for it."""

    charged = False

    async def on_operation(self) -> AsyncIterator[None]:
        try:
            yield
        except Exception:  # a parse error from the parser cache comes as one
            await self._charge_unexecuted()
            raise
        await self._charge_unexecuted()

    async def on_execute(self) -> AsyncIterator[None]:
        app = _app(self.execution_context)
        if app is not None:
            trimmed = dry_run_document(self.execution_context)
            if trimmed is not None:
                self.execution_context.graphql_document = trimmed
            verdict = await self._charge(app, int(app.extra.get("query_cost", 1)), dry_run=trimmed is not None)
            if verdict is not None and not verdict.allowed and trimmed is None:
                answer_refusal(app, verdict)
                raise rate_limited(verdict)
        yield

    async def _charge_unexecuted(self) -> None:
        app = _app(self.execution_context)
        if app is not None and not self.charged:
            await self._charge(app, 1, dry_run=False)

    async def _charge(self, app: Context, cost: int, *, dry_run: bool) -> Verdict | None:
        self.charged = True
        policy, caller = await caller_of(app)
        verdict = await app.services.rate_limits.charge(policy, caller, cost, dry_run=dry_run)
        app.extra[VERDICT] = verdict
        response = app.response
        if verdict is not None and isinstance(response, Response):  # over WebSocket, `rateLimit` tells it
            response.headers.update({
                "x-ratelimit-limit": str(verdict.capacity), "x-ratelimit-remaining": str(verdict.remaining),
                "x-ratelimit-used": str(verdict.used), "x-ratelimit-resource": "graphql",
                "x-ratelimit-reset": str(math.ceil(verdict.reset_at.timestamp())),
            })  # fmt: skip
        return verdict


def _app(execution_context: ExecutionContext) -> Context | None:
    context = execution_context.context
    return context if isinstance(context, Context) and context.services.rate_limits.enabled else None


async def caller_of(context: Context) -> tuple[Policy, str]:
    """The budget this request spends from: an API key's own, a signed-in user's, or its client address's."""
    limits = context.services.rate_limits
    user = await auth.viewer_of(context)
    if user is None:
        return limits.anonymous, f"address:{address_of(context)}"
    token = auth.bearer(context) or ""
    return limits.signed_in, f"key:{digest(token)}" if token.startswith(API_KEY_PREFIX) else f"user:{user.id}"


def address_of(context: Context) -> str:
    request = context.request
    client, headers = getattr(request, "client", None), getattr(request, "headers", None)
    forwarded = ",".join(headers.getlist("x-forwarded-for")) if headers is not None else None
    return client_address(client.host if client else None, forwarded, context.services.rate_limits.trusted_proxies)


def rate_limited(verdict: Verdict) -> BadRequest:
    cost = f"{verdict.cost} point" + ("s" if verdict.cost != 1 else "")
    if verdict.retry_after_s is None:
        message = f"this request costs {cost}, more than the whole budget of {verdict.capacity}"
    else:
        message = (f"rate limit exceeded: this request costs {cost} and {verdict.remaining} of {verdict.capacity} "
                   f"are left; retry in {_seconds(verdict.retry_after_s)} s")  # fmt: skip
    error = BadRequest("RATE_LIMITED", message)
    retry_after = None if verdict.retry_after_s is None else _seconds(verdict.retry_after_s)
    error.extensions = {**(error.extensions or {}), "retryAfter": retry_after}
    return error


def answer_refusal(context: Context, verdict: Verdict) -> None:
    """Over HTTP a refusal is a 429, with Retry-After when waiting can help (a WebSocket has only the error)."""
    response = context.response
    if isinstance(response, Response):
        response.status_code = 429
        if verdict.retry_after_s is not None:
            response.headers["retry-after"] = str(_seconds(verdict.retry_after_s))


async def admit_attempt(context: Context, operation: str, account: str) -> None:
    """logIn, signUp, apiKeyCreate: one attempt from the client address's bucket of `operation`, then one from the
    account's, refused with RATE_LIMITED when either is empty, before any password is hashed."""
    limits = context.services.rate_limits
    per_address, per_account = limits.account_policies(operation)
    for policy, caller in ((per_address, address_of(context)), (per_account, account)):
        verdict = await limits.charge(policy, caller, 1)
        if verdict is not None and not verdict.allowed:
            answer_refusal(context, verdict)
            raise rate_limited(verdict)


def _seconds(wait_s: float) -> int:
    return max(1, math.ceil(wait_s))
