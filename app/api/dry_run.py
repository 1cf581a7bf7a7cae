"""`rateLimit(dryRun: true)`, GitHub's way: the query's cost is computed and nothing else of it is evaluated."""

from __future__ import annotations

from dataclasses import replace

from strawberry.types import ExecutionContext

from graphql import (
    BooleanValueNode,
    DocumentNode,
    FieldNode,
    OperationType,
    SelectionSetNode,
    VariableNode,
    get_operation_ast,
)

KEPT = ("rateLimit", "__typename")  # what a dry run still answers


def dry_run_document(execution_context: ExecutionContext) -> DocumentNode | None:
    """`rateLimit(dryRun: true)` among a query's root fields: the document to run instead, without its other root
    fields (GitHub: the cost is computed, the query is not evaluated). None for any other document."""
    document = execution_context.graphql_document
    operation = get_operation_ast(document, execution_context.operation_name) if document else None
    if document is None or operation is None or operation.operation is not OperationType.QUERY:
        return None
    fields = [s for s in operation.selection_set.selections if isinstance(s, FieldNode)]
    variables = execution_context.variables or {}
    if not any(f.name.value == "rateLimit" and _dry_run_asked(f, variables) for f in fields):
        return None
    kept = SelectionSetNode(selections=tuple(f for f in fields if f.name.value in KEPT))
    trimmed = replace(operation, selection_set=kept)  # the parser cache's document stays as it was
    return DocumentNode(definitions=tuple(trimmed if d is operation else d for d in document.definitions))


def _dry_run_asked(field: FieldNode, variables: dict[str, object]) -> bool:
    for argument in field.arguments or ():
        if argument.name.value == "dryRun":
            value = argument.value
            if isinstance(value, VariableNode):
                return variables.get(value.name.value) is True
            return isinstance(value, BooleanValueNode) and value.value
    return False
