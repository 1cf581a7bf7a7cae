"""Whole responses of feed queries, cached in Redis: a repeated feed page skips execution entirely.

A query is cached only when every root field is a feed (`feed`, `topicFeed`, or `__typename`), no longer than
the feed's own cache and no longer than its resolvers say (`limit_max_age`: a page of a ranking computed 50 s ago
is good for 10 s more), so the caches never stack. The key is the document, the operation, the variables and,
when `feed` is asked, the reader and their feed version: a change of interests, follows, mutes or languages moves
the reader to new keys at once, and no reader is ever served another's page. Answers with errors are not kept.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from typing import Any

from graphql.execution import ExecutionResult as GraphQLExecutionResult
from starlette.requests import Request
from strawberry.extensions import SchemaExtension

from app.api import auth
from app.api.context import Context
from app.feed import versions
from graphql import FieldNode, OperationDefinitionNode, OperationType

PERSONAL = "feed"


MAX_AGE = "max_age"
FEED_VERSION = "feed_version"  # the reader's feed version, as read here: the feed resolver need not read it again


def lifetimes(feed_seconds: float) -> dict[str, float]:
    """How long each cacheable root field may be reused at most (`__typename` goes with anything)."""
    return {"feed": feed_seconds, "topicFeed": feed_seconds, "__typename": float("inf")}


def limit_max_age(context: Context, seconds: float) -> None:
    """A resolver's hint: what it returned is good for `seconds` more at most (the answer is cached no longer)."""
    context.extra[MAX_AGE] = min(context.extra.get(MAX_AGE, float("inf")), seconds)


class CachedData(dict[str, Any]):
    """A cached answer's `data`, still as the JSON text it was stored as: the HTTP view writes it out as it is
    (`NewsaggGraphQL.encode_json`) instead of parsing it only to encode it again. Only HTTP answers are cached."""

    def __init__(self, raw: str) -> None:
        super().__init__()
        self.raw = raw


def encode_response(data: object) -> str | None:
    """The response body for an answer served from this cache; None for any other answer."""
    if isinstance(data, dict) and len(data) == 1 and isinstance(cached := data.get("data"), CachedData):
        return '{"data":' + cached.raw + "}"
    return None


class ResponseCache(SchemaExtension):
    def __init__(self, *, ttl_by_field: dict[str, float]) -> None:
        self.ttl_by_field = ttl_by_field

    async def on_execute(self) -> AsyncIterator[None]:
        context = self.execution_context
        fields = _root_fields(context.graphql_document, context.operation_name)
        ttl = min((self.ttl_by_field.get(f, 0.0) for f in fields or ["-"]), default=0.0)
        app: Context | None = context.context if isinstance(context.context, Context) else None
        if app is None or not fields or not 0 < ttl < float("inf") or not isinstance(app.request, Request):
            yield
            return
        key, version_key = await self._key(app, fields)
        cache = app.services.cache
        if version_key is None:
            cached = await cache.get(key)
        else:  # one round trip: the reader's feed version, and their page under it
            version, cached = await cache.get_versioned(version_key, key)
            if version < 0:  # Redis cannot say: answer uncached
                yield
                return
            app.extra[FEED_VERSION] = version
            key = f"{key}:{version}"
        if cached is not None:
            context.result = GraphQLExecutionResult(data=CachedData(cached))
            yield
            return
        yield
        result = context.result
        ttl = min(ttl, app.extra.get(MAX_AGE, ttl))
        if isinstance(result, GraphQLExecutionResult) and not result.errors and result.data is not None and ttl > 0:
            await cache.put(key, json.dumps(result.data, separators=(",", ":")), ttl)

    async def _key(self, app: Context, fields: list[str]) -> tuple[str, str | None]:
        """The key (without the reader's feed version) and, for a signed-in reader's feed, their version's key."""
        context = self.execution_context
        scope, version_key = "public", None
        if PERSONAL in fields:
            user = await auth.viewer_of(app)
            if user is not None:
                scope, version_key = f"user:{user.id}", versions.version_key(user.id)
        raw = json.dumps([context.query, context.operation_name, context.variables, scope], sort_keys=True,
                         default=str)  # fmt: skip
        return "response:" + hashlib.sha256(raw.encode()).hexdigest(), version_key


def _root_fields(document: Any, operation_name: str | None) -> list[str] | None:
    """Names of the root fields of the query to run; None when it is not a plain query of plain fields."""
    if document is None:
        return None
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    chosen = [o for o in operations if operation_name is None or (o.name and o.name.value == operation_name)]
    if len(chosen) != 1 or chosen[0].operation is not OperationType.QUERY:
        return None
    names = []
    for selection in chosen[0].selection_set.selections:
        if not isinstance(selection, FieldNode) or selection.directives:
            return None  # fragments and @include/@skip: not worth reasoning about here
        names.append(selection.name.value)
    return names
