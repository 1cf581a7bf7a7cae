"""The document's shape checked while it is validated, so a cached validation keeps the verdict: depth, aliases
and fragment spreads of each operation, whatever its variables."""

from __future__ import annotations

from app.api.analysis.summary import Analysis, Summary
from app.api.errors import BadRequest
from app.settings import Settings
from graphql import FieldNode, GraphQLField, OperationDefinitionNode, ValidationContext, ValidationRule


def shape_rule(settings: Settings) -> type[ValidationRule]:
    """One rule class per schema: the validation cache is keyed on the rule classes, so they must not change."""

    class QueryShape(ValidationRule):
        def __init__(self, context: ValidationContext) -> None:
            super().__init__(context)
            analysis = Analysis(context.schema, context.document, _no_pages)
            for definition in context.document.definitions:
                if isinstance(definition, OperationDefinitionNode):
                    for error in shape_refusals(analysis.operation(definition), settings):
                        context.report_error(error)

    return QueryShape


def shape_refusals(summary: Summary, settings: Settings) -> list[BadRequest]:
    checks = [
        ("QUERY_TOO_DEEP", "levels deep", summary.depth, settings.query_max_depth),
        ("TOO_MANY_ALIASES", "aliases", summary.aliases, settings.query_max_aliases),
        ("TOO_MANY_FRAGMENT_SPREADS", "fragment spreads, each counted where its fragment is used",
         summary.spreads, settings.query_max_fragment_spreads),
    ]  # fmt: skip
    return [BadRequest(code, f"the operation has {figure(n)} {what}; at most {limit:,} are allowed")
            for code, what, n, limit in checks if n > limit]  # fmt: skip


def figure(count: int) -> str:
    """A count for a message: some documents multiply into numbers too long to print (Python refuses past 4,300
    digits)."""
    return f"{count:,}" if count < 10**30 else "over 10^30"


def _no_pages(node: FieldNode, definition: GraphQLField) -> None:
    """Page sizes depend on the request's variables: they are counted when it runs (app/api/analysis/cost.py)."""
