"""PostgreSQL tsquery text (as `CAST(tsquery AS text)` writes it) parsed, and loosened for the text-search index.

The GIN index on search vectors answers "which articles hold these words", not where in the text: a phrase
(`'na' <-> 'ang'`, also what a hyphenated or apostrophised word becomes) is checked against every candidate's stored
vector, and an excluded word (`!'home'`) makes the index walk that word's postings too. `loosened` turns a query
into the plain conjunctions and disjunctions it implies (phrases as AND, exclusions dropped) so the index finds a
superset of the matches and the planner can count them; the exact query is then tested on the rows found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(r"\s*(?:('(?:[^']|'')*'(?::[*A-Da-d]+)?)|(<->|<\d+>)|([!&|()]))")


@dataclass(frozen=True, slots=True)
class Node:
    op: str  # "word" (text is the operand as written), "!", "&", "|", or a phrase operator ("<->", "<2>")
    text: str = ""
    left: Node | None = None
    right: Node | None = None


class _Parser:
    """Precedence as PostgreSQL reads tsquery: `!`, then phrase, then `&`, then `|`."""

    _LEVELS = ("|", "&", "<")

    def __init__(self, source: str) -> None:
        self.tokens: list[str] = []
        position, source = 0, source.rstrip()
        while position < len(source):
            found = _TOKEN.match(source, position)
            if found is None or found.end() == position:
                raise ValueError(f"not tsquery text at {position}: {source[position : position + 20]!r}")
            self.tokens.append(next(group for group in found.groups() if group))
            position = found.end()
        self.at = 0

    def parse(self) -> Node:
        node = self._binary(0)
        if self.at != len(self.tokens):
            raise ValueError(f"unexpected {self.tokens[self.at]!r}")
        return node

    def _peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def _take(self) -> str:
        if self.at >= len(self.tokens):
            raise ValueError("the query ends too soon")
        self.at += 1
        return self.tokens[self.at - 1]

    def _binary(self, level: int) -> Node:
        if level == len(self._LEVELS):
            return self._unary()
        node = self._binary(level + 1)
        while (token := self._peek()) is not None and token.startswith(self._LEVELS[level]):
            node = Node(self._take(), left=node, right=self._binary(level + 1))
        return node

    def _unary(self) -> Node:
        token = self._take()
        if token == "!":
            return Node("!", left=self._unary())
        if token == "(":
            node = self._binary(0)
            if self._take() != ")":
                raise ValueError("unbalanced parentheses")
            return node
        if not token.startswith("'"):
            raise ValueError(f"unexpected {token!r}")
        return Node("word", token)


def parse(source: str) -> Node:
    """The tree of a tsquery's text; ValueError for anything else."""
    return _Parser(source).parse()


def written(node: Node) -> str:
    """The tree as tsquery text (every operation in parentheses)."""
    if node.op == "word":
        return node.text
    assert node.left is not None
    if node.op == "!":
        return f"!({written(node.left)})"
    assert node.right is not None
    return f"({written(node.left)} {node.op} {written(node.right)})"


def loosened(source: str) -> str | None:
    """The query with phrases as AND and exclusions dropped: every article it matches, the loosened one matches
    (the text as it is when it has neither). None when nothing is left to require (`'a' | !'b'` matches almost
    everything) or the text is not a tsquery."""
    try:
        tree = parse(source)
    except ValueError:
        return None
    if not _loosenable(tree):
        return source
    node = _loosened(tree)
    return written(node) if node is not None else None


def _loosenable(node: Node) -> bool:
    return node.op == "!" or node.op.startswith("<") or any(_loosenable(n) for n in (node.left, node.right) if n)


def _loosened(node: Node) -> Node | None:
    """None stands for "true": no condition left."""
    if node.op == "word":
        return node
    if node.op == "!":
        return None
    assert node.left is not None
    assert node.right is not None
    left, right = _loosened(node.left), _loosened(node.right)
    if node.op == "|":
        return Node("|", left=left, right=right) if left is not None and right is not None else None
    if left is None or right is None:  # & and phrases: the condition that remains
        return left or right
    return Node("&", left=left, right=right)
