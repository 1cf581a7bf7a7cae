"""Every request error carries an `extensions.code`: a document that does not parse or validate. A code a validation
rule set itself (the query limits') is kept; variables that do not fit are coded with what execution raises
(BAD_USER_INPUT, app/api/internal_errors.py)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from strawberry.extensions import SchemaExtension

from graphql import GraphQLError, GraphQLSyntaxError

PARSE_FAILED = "GRAPHQL_PARSE_FAILED"
VALIDATION_FAILED = "GRAPHQL_VALIDATION_FAILED"


class RequestErrorCodes(SchemaExtension):
    def on_operation(self) -> Iterator[None]:
        """Parse errors by their type: the parser cache raises them from its own hook, past every on_parse."""
        try:
            yield
        except GraphQLSyntaxError as error:
            label([error], PARSE_FAILED)
            raise
        errors = self.execution_context.pre_execution_errors or []
        label([error for error in errors if isinstance(error, GraphQLSyntaxError)], PARSE_FAILED)

    def on_validate(self) -> Iterator[None]:
        yield
        label(self.execution_context.pre_execution_errors, VALIDATION_FAILED)


def label(errors: Sequence[GraphQLError] | None, code: str) -> None:
    for error in errors or []:
        if not (error.extensions or {}).get("code"):
            error.extensions = {**(error.extensions or {}), "code": code}
