"""Text PostgreSQL cannot store (a NUL character, a lone UTF-16 surrogate) is refused before any resolver runs, wherever
a client put it: in a variable, at any depth, or in an escape of a string literal of the document (the parser refuses
a lone surrogate anywhere else in it). What text that is, app/text/storable.py says (`unstorable`), for feed text
too."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from strawberry.extensions import SchemaExtension

from app.api.errors import bad_argument
from app.text.storable import unstorable
from graphql import DocumentNode, StringValueNode, Visitor, visit


def _variable_strings(variables: dict[str, Any] | None) -> Iterator[tuple[str, str]]:
    """Every string in the variables with where it is (`$input.email`): dictionary keys too. A loop, not recursion,
    however deep the JSON nests."""
    pending: list[tuple[str, Any]] = [(f"${name}", value) for name, value in (variables or {}).items()]
    while pending:
        where, value = pending.pop()
        if isinstance(value, str):
            yield where, value
        elif isinstance(value, dict):
            for key, item in value.items():
                yield where, str(key)
                pending.append((f"{where}.{key}", item))
        elif isinstance(value, list):
            pending.extend((f"{where}[{n}]", item) for n, item in enumerate(value))


class _Literals(Visitor):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def enter_string_value(self, node: StringValueNode, *_: Any) -> None:
        self.found.append(node.value)


def _literal_strings(query: str, document: DocumentNode | None) -> list[str]:
    """The document's string literals; their escapes (\\u0000) are only decoded in the parsed document, so a text
    with no backslash-u needs no walk."""
    if document is None or "\\u" not in query:
        return []
    literals = _Literals()
    visit(document, literals)
    return literals.found


class TextInputCheck(SchemaExtension):
    def on_execute(self) -> Iterator[None]:
        context = self.execution_context
        for where, text in _variable_strings(context.variables):
            if problem := unstorable(text):
                raise bad_argument(f"`{where}` contains {problem}")
        for text in _literal_strings(context.query or "", context.graphql_document):
            if problem := unstorable(text):
                raise bad_argument(f"a string in the document contains {problem}")
        yield
