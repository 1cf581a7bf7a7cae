"""What a GraphQL document asks for, each fragment summed up once: depth, aliases, spreads, nodes and requests.

The figures are those of the document with every fragment spread replaced by its fragment (the inlined document),
but no spread is ever followed: a fragment is summed up once, after the fragments it spreads, and a spread adds
that summary. Thirty fragments each spreading the previous one twice are thirty summaries, not 2^30 walks.
Execution merges a fragment spread twice in one selection set and fields sharing a response key, and runs every
page at its full size only when the data is there, so the figures are an upper bound of what runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from graphql.type.introspection import SchemaMetaFieldDef, TypeMetaFieldDef, TypeNameMetaFieldDef

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLField,
    GraphQLInterfaceType,
    GraphQLNamedType,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    NameNode,
    OperationDefinitionNode,
    SelectionSetNode,
    get_named_type,
)

PageSize = Callable[[FieldNode, GraphQLField], int | None]
"""The page a field asks for (`first`, its default, capped), or None when the field is not a connection."""

META_FIELDS = {"__schema": SchemaMetaFieldDef, "__type": TypeMetaFieldDef, "__typename": TypeNameMetaFieldDef}


@dataclass(frozen=True)
class Summary:
    depth: int = 0  # levels of fields with selections below; introspection is not counted (GraphiQL's is deep)
    aliases: int = 0
    spreads: int = 0  # fragment spreads in the inlined document: a spread inside a fragment counts at each use
    nodes: int = 0  # GitHub's nodes: each connection's page size times one plus the nodes of each of its items
    requests: int = 0  # GitHub's connections requested: one per connection, times the page sizes above it

    def __add__(self, other: Summary) -> Summary:
        """Two siblings: the deeper one's depth, everything else added."""
        return Summary(max(self.depth, other.depth), self.aliases + other.aliases, self.spreads + other.spreads,
                       self.nodes + other.nodes, self.requests + other.requests)  # fmt: skip

    def under(self, alias: NameNode | None, page: int | None, *, counted: bool) -> Summary:
        """This selection as a field's: one level deeper, and a page of it for a connection."""
        depth = self.depth + 1 if counted else 0
        aliases = self.aliases + (alias is not None)
        if page is None:
            return Summary(depth, aliases, self.spreads, self.nodes, self.requests)
        return Summary(depth, aliases, self.spreads, page * (1 + self.nodes), 1 + page * self.requests)

    @property
    def github_cost(self) -> int:
        """GitHub's rule: connections requested / 100, rounded, at least 1."""
        return max(1, (self.requests + 50) // 100)

    def cost(self, nodes_per_point: int) -> int:
        """The price charged: GitHub's, or the nodes at `nodes_per_point` a point (rounded up) when that is more.
        GitHub's counts connections, not their items: thirty aliased pages of 100 are one point by it alone."""
        return max(self.github_cost, -(-self.nodes // nodes_per_point))


EMPTY = Summary()


class Analysis:
    """One document's fragments summed up, each once; `work` counts the selections and spreads looked at."""

    def __init__(self, schema: GraphQLSchema, document: DocumentNode, page: PageSize) -> None:
        self.schema, self.page, self.work = schema, page, 0
        fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
        self.fragments: dict[str, Summary] = {}
        for fragment in _dependency_order(fragments, self._spread_names):
            condition = schema.get_type(fragment.type_condition.name.value)
            self.fragments[fragment.name.value] = self._selections(fragment.selection_set, condition)

    def operation(self, operation: OperationDefinitionNode) -> Summary:
        return self._selections(operation.selection_set, self.schema.get_root_type(operation.operation))

    def _selections(self, selection_set: SelectionSetNode, parent: GraphQLNamedType | None) -> Summary:
        total = EMPTY
        for selection in selection_set.selections:
            self.work += 1
            if isinstance(selection, FieldNode):
                field = self._field(selection, parent)
                total = total if field is EMPTY else total + field
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                inner = self.schema.get_type(condition.name.value) if condition else parent
                total += self._selections(selection.selection_set, inner)
            elif isinstance(selection, FragmentSpreadNode):  # a cycle's or an unknown fragment's: nothing
                fragment = self.fragments.get(selection.name.value, EMPTY)
                total += Summary(fragment.depth, fragment.aliases, fragment.spreads + 1, fragment.nodes,
                                 fragment.requests)  # fmt: skip
        return total

    def _field(self, node: FieldNode, parent: GraphQLNamedType | None) -> Summary:
        name = node.name.value
        definition = META_FIELDS.get(name) or _fields_of(parent).get(name)
        page = self.page(node, definition) if definition and definition.args else None
        if node.selection_set is None:  # most fields: a leaf, counting for nothing unless aliased or paged
            return EMPTY if node.alias is None and page is None else EMPTY.under(node.alias, page, counted=False)
        below = self._selections(node.selection_set, get_named_type(definition.type) if definition else None)
        return below.under(node.alias, page, counted=not name.startswith("__"))

    def _spread_names(self, selection_set: SelectionSetNode) -> Iterator[str]:
        """The fragments a selection spreads, at any depth (a loop, not a recursion: any nesting is fine)."""
        pending = [selection_set]
        while pending:
            for selection in pending.pop().selections:
                self.work += 1
                if isinstance(selection, FragmentSpreadNode):
                    yield selection.name.value
                elif isinstance(selection, FieldNode | InlineFragmentNode) and selection.selection_set:
                    pending.append(selection.selection_set)


def _fields_of(parent: GraphQLNamedType | None) -> dict[str, GraphQLField]:
    return parent.fields if isinstance(parent, GraphQLObjectType | GraphQLInterfaceType) else {}


def _dependency_order(
    fragments: dict[str, FragmentDefinitionNode], spread_names: Callable[[SelectionSetNode], Iterator[str]]
) -> list[FragmentDefinitionNode]:
    """Every fragment after those it spreads (depth-first, with a stack); a spread closing a cycle is left out, so
    the fragment it names is not yet summed up where it is spread and adds nothing there."""
    order: list[FragmentDefinitionNode] = []
    state: dict[str, bool] = {}  # False: open on the stack, True: placed
    for root in fragments:
        if root in state:
            continue
        state[root] = False
        stack = [(root, spread_names(fragments[root].selection_set))]
        while stack:
            name, spreads = stack[-1]
            following = next((s for s in spreads if s in fragments and s not in state), None)
            if following is None:
                stack.pop()
                state[name] = True
                order.append(fragments[name])
            else:
                state[following] = False
                stack.append((following, spread_names(fragments[following].selection_set)))
    return order
