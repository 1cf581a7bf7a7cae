"""Persisted queries at the edge: over HTTP (POST, and GET for queries) a schema extension swaps a request's hash
for its document before parsing; the WebSocket handler calls `resolve` for each subscribe."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from strawberry.extensions import SchemaExtension

from app.api.context import Context
from app.api.errors import BadRequest
from app.documents.persisted import DocumentRefused, PersistedQueries, Resolved
from app.settings import Settings

REFUSED = "# refused"  # a document for a refused hash-only request: strawberry wants one before it parses


def persisted_queries(context: Context, settings: Settings) -> PersistedQueries:
    return PersistedQueries(context.services.redis, context.services.db, settings)


async def resolve(queries: PersistedQueries, query: str | None, extensions: Any) -> Resolved | None:
    try:
        return await queries.resolve(query, extensions)
    except DocumentRefused as refused:
        raise BadRequest(refused.code, str(refused)) from None


class PersistedQueryExtension(SchemaExtension):
    """Before the others look at the document: what runs is known first. A refusal is the request's only error
    (`data` null). It is raised as parsing starts, not as the operation does: an operation hook that raises on entry
    leaves the hooks entered before it unfinished, so the metrics and error masking would never see it. Over
    WebSocket the handler has already resolved the document."""

    refusal: Exception | None = None

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    async def on_operation(self) -> AsyncIterator[None]:
        execution = self.execution_context
        context = execution.context
        if not isinstance(context, Context) or isinstance(context.connection_params, dict):
            yield
            return
        queries = persisted_queries(context, self.settings)
        resolved = None
        try:
            resolved = await resolve(queries, execution.query, execution.operation_extensions)
        except Exception as error:  # a refusal, or Redis or the database failing: raised by on_parse
            self.refusal, execution.query = error, execution.query or REFUSED
        if resolved is not None:
            execution.query = resolved.query
        yield
        result = execution.result
        if resolved is not None and result is not None and result.data is not None:
            await queries.keep(resolved)  # kept once it proved valid: it ran

    def on_parse(self) -> Iterator[None]:
        if self.refusal is not None:
            raise self.refusal
        yield
