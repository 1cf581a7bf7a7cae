"""Unexpected failures are logged with the request id and answered with a generic INTERNAL_SERVER_ERROR; every error a
client caused keeps its message and gets a code."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator

from strawberry.exceptions import MissingQueryError
from strawberry.extensions import SchemaExtension
from strawberry.relay.types import GlobalIDValueError
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.types.execution import StreamExecutionResult

from app.observability.request_id import bound, current
from app.places.countries import InvalidRegion
from graphql import GraphQLError

log = logging.getLogger(__name__)

INTERNAL = "INTERNAL_SERVER_ERROR"
MESSAGE = "Internal server error"
# Raised out of the operation on purpose: the HTTP view answers them itself (400 or 405, a message of its own).
TRANSPORT_ERRORS = (MissingQueryError, CannotGetOperationTypeError, InvalidOperationTypeError)
# Domain errors a query may raise as they are, and their codes (a mutation answers them in its payload instead)
DOMAIN_CODES: dict[type[object], str] = {InvalidRegion: "INVALID_REGION"}


def is_client_error(error: GraphQLError) -> bool:
    """Whether the client caused it: the error names a code, or graphql-core wrote it about the document or the
    values sent (no exception under it), or a resolver or a scalar refused an input. Anything else is ours."""
    if error.extensions and "code" in error.extensions:
        return True
    original = error.original_error
    return original is None or isinstance(original, (GraphQLError, GlobalIDValueError, *DOMAIN_CODES))


def internal(error: GraphQLError) -> GraphQLError:
    """The generic answer for `error`, logged in full under the request id the answer carries (the request's own,
    bound by the app's middleware; a new one for a schema run without it)."""
    rid = current() or uuid.uuid4().hex
    with bound(rid):
        log.error("internal error answering request %s at %s", rid, error.path or "-", exc_info=error.original_error)
    return GraphQLError(MESSAGE, error.nodes, error.source, error.positions, error.path,
                        extensions={"code": INTERNAL, "requestId": rid})  # fmt: skip


def mask(result: object) -> None:
    """`result`'s errors with every unexpected one answered generically."""
    errors = getattr(result, "errors", None)
    if errors:
        result.errors = [e if is_client_error(e) else internal(e) for e in errors]  # type: ignore[attr-defined]


class InternalErrors(SchemaExtension):
    """Outermost extension: it sees what every other extension raises once they all started (one failing as the
    operation starts is past its reach: NewsaggSchema.execute masks that answer). Only errors raised once execution
    started are given codes here: parse and validation errors are the transport's to name."""

    executed = False

    def on_execute(self) -> Iterator[None]:
        self.executed = True
        yield

    def on_operation(self) -> Iterator[None]:
        try:
            yield
        except (GraphQLError, *TRANSPORT_ERRORS):
            raise
        except Exception as error:  # an extension's hook failed: strawberry answers with this error instead
            raise internal(GraphQLError(str(error), original_error=error)) from None
        self._mend(self.execution_context.result)

    def on_stream_result(self, result: StreamExecutionResult) -> Iterator[None]:
        self._mend(result)  # before it is sent: a subscription's events, and its errors over WebSocket
        yield

    def _mend(self, result: object) -> None:
        mask(result)
        if self.executed and getattr(result, "errors", None):
            result.errors = [coded(error) for error in result.errors]  # type: ignore[attr-defined]


def coded(error: GraphQLError) -> GraphQLError:
    """`error` with its domain error's code, else BAD_USER_INPUT when it names none: once execution started, what is
    not ours is the client's."""
    if error.extensions and "code" in error.extensions:
        return error
    code = DOMAIN_CODES.get(type(error.original_error), "BAD_USER_INPUT")
    return GraphQLError(error.message, error.nodes, error.source, error.positions, error.path,
                        extensions={**(error.extensions or {}), "code": code})  # fmt: skip
