"""Each request's price, computed from its variables before it runs: GitHub's nodes and cost (raised to the nodes
a point buys), kept on the context for the rate limiter and refused past the limits."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from graphql.utilities import value_from_ast_untyped
from strawberry.extensions import SchemaExtension

from app.api.analysis.rule import figure
from app.api.analysis.summary import Analysis, PageSize, Summary
from app.api.context import Context
from app.api.errors import BadRequest
from app.settings import Settings
from app.sharing.service import MAX_DAYS
from graphql import DocumentNode, FieldNode, GraphQLField, GraphQLSchema, OperationDefinitionNode, get_operation_ast

QUERY_COST = "query_cost"  # Context.extra keys: what this request costs (an int, at least 1) and its nodes
QUERY_NODES = "query_nodes"
PAGE_ARGUMENTS = ("first", "last")
SPAN_ARGUMENT = "days"  # ShareLink.clicks(days:): an item a day (byDay), priced as a page of that many


class QueryCost(SchemaExtension):
    """The first extension to enter execution: what follows (the rate limiter) reads the price it stored."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def on_execute(self) -> Iterator[None]:
        context = self.execution_context
        document = context.graphql_document
        operation = get_operation_ast(document, context.operation_name) if document else None
        if document is not None and operation is not None:
            summary = price(context.schema._schema, document, operation, context.variables, self.settings)
            if isinstance(context.context, Context):
                cost = summary.cost(self.settings.query_nodes_per_point)
                context.context.extra.update({QUERY_COST: cost, QUERY_NODES: summary.nodes})
            if refusal := cost_refusal(summary, self.settings):
                raise refusal  # execution never starts; strawberry answers with this error alone
        yield


def price(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode,
          variables: dict[str, Any] | None, settings: Settings) -> Summary:  # fmt: skip
    """The operation's figures with its page sizes: `first` (a literal, a variable, a variable's default), else
    the default page size; capped at the largest page, as the resolvers refuse larger ones."""
    values = {d.variable.name.value: value_from_ast_untyped(d.default_value)
              for d in operation.variable_definitions or () if d.default_value is not None}  # fmt: skip
    values.update(variables if isinstance(variables, dict) else {})
    return Analysis(schema, document, page_sizes(values, settings)).operation(operation)


def page_sizes(variables: dict[str, Any], settings: Settings) -> PageSize:
    def page(node: FieldNode, definition: GraphQLField) -> int | None:
        if SPAN_ARGUMENT in definition.args:
            default = definition.args[SPAN_ARGUMENT].default_value
            return _asked(node, (SPAN_ARGUMENT,), variables, default if isinstance(default, int) else 1, MAX_DAYS)
        if not any(name in definition.args for name in PAGE_ARGUMENTS):
            return None
        return asked_page(node, definition, variables, settings)

    return page


def asked_page(node: FieldNode, definition: GraphQLField, variables: dict[str, Any], settings: Settings) -> int:
    """The page a paged field asks for: `first` (or `last`) as asked, else the field's own default (a nested list,
    such as an outlet's articles in a story's coverage, declares a smaller one), else the default page size; at most
    the largest page."""
    declared = next((definition.args[name].default_value for name in PAGE_ARGUMENTS if name in definition.args), None)
    default = declared if isinstance(declared, int) and not isinstance(declared, bool) else settings.page_size_default
    return _asked(node, PAGE_ARGUMENTS, variables, default, settings.page_size_max)


def _asked(node: FieldNode, names: tuple[str, ...], variables: dict[str, Any], default: int, most: int) -> int:
    """The size a field's argument asks for (a literal, a variable, a variable's default), else `default`; at most
    `most`, as the resolvers refuse more."""
    asked = next((value_from_ast_untyped(a.value, variables) for a in node.arguments or ()
                  if a.name.value in names), None)  # fmt: skip
    if not isinstance(asked, int) or isinstance(asked, bool):
        asked = default
    return min(max(asked, 0), most)


def cost_refusal(summary: Summary, settings: Settings) -> BadRequest | None:
    if summary.nodes > settings.query_max_nodes:
        return BadRequest("QUERY_TOO_COMPLEX", f"the query asks for up to {figure(summary.nodes)} nodes; at most "
                          f"{settings.query_max_nodes:,} are allowed")  # fmt: skip
    if (cost := summary.cost(settings.query_nodes_per_point)) > settings.query_max_cost:
        return BadRequest("QUERY_TOO_COMPLEX", f"the query costs {figure(cost)} points; at most "
                          f"{settings.query_max_cost:,} are allowed")  # fmt: skip
    return None
