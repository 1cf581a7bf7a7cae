"""Hostile values for every GraphQL input type (hypothesis strategies), and the documents that send them to a root
field: the fuzz of tests/test_hostile_inputs.py."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from hypothesis import strategies as st

from app.api.relay import encode_cursor
from graphql import (
    GraphQLArgument,
    GraphQLEnumType,
    GraphQLField,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    Undefined,
    ast_from_value,
    get_named_type,
    is_leaf_type,
    print_ast,
)
from tests.newsroom import PASSWORD, global_id

# What must never reach a client: SQL, the database driver, a Python stack trace, an exception's class name.
LEAK = re.compile(r"SELECT |INSERT |UPDATE \w+ SET|DELETE FROM|\[SQL|\[parameters|asyncpg|sqlalchemy|sqlalche\.me|"
                  r"psycopg|Traceback|File \"|line \d+, in |\b[A-Z]\w*(Error|Exception|Violation)\b")  # fmt: skip
# Numbers Python's JSON writer cannot write, sent as JSON numbers: 1e999 (Python reads it as infinity) and an integer
# of 5,000 digits (past the 4,300 Python reads by default).
RAW = {"__1e999__": "1e999", "__5000_digits__": "9" * 5_000}

BIG = "x" * 10_000
TEXT = [
    "", " ", "\x00", "a\x00b", "\ud800", "a\udfffb", "\ud83d", BIG, "é" * 5_000, "\u202eevil\u202c", "🗞️📰" * 100,
    "' OR 1=1 --", "'; DROP TABLE users; --", "%", "_", "\\", "\\x00", "$1", "::text", "-", "\"\"", "or", "-a -b",
    "\t\n\r", "\x01\x1f\x7f", "ﷺ" * 300, "Robert'); DROP TABLE sources;--", "a" * 65, "en", "fr", "zz",
    "reader@example.com", "x@" + "y" * 300 + ".com", PASSWORD, "http://127.0.0.1:9/feed.xml", "http://[::1]:9/\x00",
    "http://127.0.0.1:99999/", "file:///etc/passwd", "javascript:alert(1)", "http://user:pw@127.0.0.1/",
    "<?xml version='1.0'?><!DOCTYPE x [<!ENTITY a 'aaaaaaaaaa'><!ENTITY b '&a;&a;&a;&a;&a;&a;&a;&a;'>]><opml><body>"
    "<outline xmlUrl='http://127.0.0.1:9/&b;'/></body></opml>",
    "<opml version='2.0'><body><outline text='x' xmlUrl='http://127.0.0.1:9/o' language='" + "x" * 300
    + "' category='" + "c" * 5_000 + "' authority='1e999'/></body></opml>",
    "<opml><body><outline xmlUrl='http://127.0.0.1:9/nan' authority='NaN' title='&#xD800;'/></body></opml>",
    "=" * 8, "not base64 !", base64.b64encode(b"\xff\xfe\x00").decode(),
]  # fmt: skip
INTS: list[Any] = [0, -1, 2**31 - 1, -(2**31)]  # in GraphQL's Int
FLOATS: list[Any] = [-0.0, 1e-6, 5e-324, 1e308, -1e308, 2.0**63]  # in GraphQL's Float
MISFITS: dict[str, list[Any]] = {  # values of no type the argument has
    "Int": [2**31, -(2**31) - 1, 2**63, 10**400, *RAW, 1.5, float("nan"), "1"],
    "Float": [float("nan"), float("inf"), float("-inf"), *RAW, 10**400, "0.5"],
}
MOMENTS = ["2024-05-01T12:00:00", "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "2024-02-30T00:00:00Z",
           "now", "1e999", "2024-05-01T12:00:00+99:00", "+275760-09-13T00:00:00Z"]  # fmt: skip
JUNK: list[Any] = [[], {}, [[[[]]]], {"a": {"b": "\x00"}}, True, 1.5, BIG, ["\ud800"], {"\x00": 1}]
CURSOR_KINDS = ["source", "article", "story", "breaking", "breaking-story", "feed", "search", "coverage", "x"]
KEYS: list[Any] = [0, -1, 2**63, 10**20, -(2**64), 1.5, 1e308, "NaN", "\x00", "\ud800", None, True, [], {},
                   "2024-05-01T12:00:00+00:00", "0001-01-01T00:00:00+14:00", "2024-05-01T12:00:00", BIG]  # fmt: skip
RAW_CURSORS = ['["breaking",1e999]', '["source",NaN]', '["article","2024-05-01T12:00:00Z",1e400]', "[]", '"x"', "{}",
               '["breaking",' + "9" * 5000 + "]"]  # fmt: skip
FORGED_IDS = ["99999999999999999999999", "-1", "Source", "%%%", "\ud800", BIG] + [
    base64.b64encode(text.encode("utf-8", "surrogatepass")).decode()
    for text in ("Source:" + str(2**63), "Source:\x00", "Source:" + "9" * 5000, "Nope:1", "Source:²", "\ud800:1")
]
# What the sweep sends to each argument in turn, the others left plain.
SWEEP: dict[str, list[Any]] = {
    "String": [
        "\x00",
        "a\ud800b",
        BIG,
        "é" * 5_000,
        "' OR 1=1 --",
        "\u202eevil\u202c",
        "🗞️📰" * 100,
        "",
        encode_cursor("breaking", [2**64]),
        encode_cursor("article", ["0001-01-01T00:00:00+14:00", 1]),
        encode_cursor("search", ["x", 2**62, None, "0001-01-01T00:00:00+14:00", 2**62, 1, 0.5, 2**62]),
        encode_cursor("feed", ["x", 2**63 - 1]),
    ],
    "ID": FORGED_IDS,
    "Int": [-1, 2**31 - 1, -(2**31), *MISFITS["Int"]],
    "Float": [*FLOATS, *MISFITS["Float"]],
    "Boolean": ["true", 0],
    "DateTime": MOMENTS,
}
PLAIN: dict[str, Any] = {"String": "floods", "ID": global_id("Source", 1), "Int": 5, "Float": 0.5, "Boolean": True,
                         "DateTime": "2024-05-01T12:00:00Z"}  # fmt: skip
PLAIN_BY_NAME: dict[str, Any] = {
    "feedUrl": "http://127.0.0.1:9/feed.xml", "email": "editor@example.com", "password": PASSWORD, "sessionId": "s1",
    "languages": "en", "articleId": global_id("Article", 1), "query": "floods", "name": "app",
    "opml": "<opml version='2.0'><body><outline text='a' xmlUrl='http://127.0.0.1:9/opml.xml'/></body></opml>",
}  # fmt: skip


def cursors() -> st.SearchStrategy[str]:
    """Cursors of every kind newsagg issues, with keys no cursor of its own carries."""
    keys = st.lists(st.sampled_from(KEYS), min_size=1, max_size=4)
    raw = st.sampled_from(RAW_CURSORS)
    return st.one_of(st.builds(encode_cursor, st.sampled_from(CURSOR_KINDS), keys),
                     raw.map(lambda text: base64.urlsafe_b64encode(text.encode()).decode()))  # fmt: skip


def global_ids() -> st.SearchStrategy[str]:
    """Ids of rows that exist (1), of none, of types newsagg lacks, and no id at all."""
    types = st.sampled_from(["Source", "Article", "Story", "ApiKey", "Viewer", "Nope", "", "\x00", "Source:1"])
    rows = st.sampled_from(
        ["1", "0", "-1", str(2**63), "9" * 30, "9" * 5000, "1e3", "\u0661", "\u00b2", " 1", "\x00", ""]
    )
    made = st.builds(lambda t, r: base64.b64encode(f"{t}:{r}".encode("utf-8", "surrogatepass")).decode(), types, rows)
    plain = [global_id("Source", 1), global_id("Article", 1), global_id("Story", 1)]
    return st.one_of(made, st.sampled_from(FORGED_IDS + plain))


SCALARS: dict[str, st.SearchStrategy[Any]] = {
    "String": st.one_of(st.sampled_from(TEXT), st.text(max_size=40), cursors()),
    "ID": global_ids(),
    "Int": st.one_of(st.sampled_from(INTS), st.integers(min_value=-(2**31), max_value=2**31 - 1)),
    "Float": st.one_of(st.sampled_from(FLOATS), st.floats(allow_nan=False, allow_infinity=False)),
    "Boolean": st.booleans(),
    "DateTime": st.one_of(st.sampled_from(MOMENTS), st.datetimes().map(lambda moment: moment.isoformat())),
}


def values(type_: GraphQLInputType) -> st.SearchStrategy[Any]:
    """A value of `type_` (a hostile one) nine times in ten, else one of no type it has: a request whose every
    argument but one is well typed still reaches the resolvers."""
    misfits = st.sampled_from(JUNK + MISFITS.get(getattr(get_named_type(type_), "name", ""), []))
    return st.integers(0, 9).flatmap(lambda n: misfits if n == 0 else _typed(type_))


def _typed(type_: GraphQLInputType) -> st.SearchStrategy[Any]:
    if isinstance(type_, GraphQLNonNull):
        return _typed(type_.of_type)
    if isinstance(type_, GraphQLList):
        inner = values(type_.of_type)
        return st.one_of(st.lists(inner, max_size=4), inner.map(lambda one: [one] * 2_000))
    if isinstance(type_, GraphQLInputObjectType):
        return st.fixed_dictionaries({name: values(field.type) for name, field in type_.fields.items()})
    if isinstance(type_, GraphQLEnumType):
        return st.sampled_from(list(type_.values))
    return SCALARS[type_.name]  # type: ignore[union-attr]


def arguments(field: GraphQLField) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({name: values(argument.type) for name, argument in field.args.items()})


def sweep(field: GraphQLField) -> Iterator[dict[str, Any]]:
    """Each argument and input field in turn given each hostile value of its type, the others plain (or left out)."""
    plain = {name: _plain(a.type, name) for name, a in field.args.items() if _required(a.type, a.default_value)}
    for path, type_ in _positions(field.args.items(), ()):
        for value in _hostile(type_, path[-1]):
            yield _replaced(plain, path, value)


def _positions(fields: Iterable[tuple[str, Any]], above: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    for name, field in fields:
        yield (*above, name), field.type
        named = get_named_type(field.type)
        if isinstance(named, GraphQLInputObjectType):
            yield from _positions(named.fields.items(), (*above, name))


def _hostile(type_: GraphQLInputType, name: str) -> list[Any]:
    inner = type_.of_type if isinstance(type_, GraphQLNonNull) else type_
    if isinstance(inner, GraphQLList):
        many = [_plain(inner.of_type, name)] * 2_000
        return [None, [[]], many, *([value] for value in _hostile(inner.of_type, name))]
    if isinstance(inner, GraphQLInputObjectType):
        return [None, {}, {**_plain(inner), "unknown": 1}, "x"]
    if isinstance(inner, GraphQLEnumType):
        return [None, "NOPE", next(iter(inner.values)).lower(), 1]
    plain = _plain(inner, name)
    if inner.name == "String":  # type: ignore[union-attr]
        # inside a value the resolver accepts, so that it gets past the checks of form (an email's, a URL's)
        return [None, *SWEEP["String"], plain[:1] + "\x00" + plain[1:], plain + "\udc00", plain + BIG]
    return [None, *SWEEP[inner.name]]  # type: ignore[union-attr]


def _plain(type_: GraphQLInputType, name: str = "") -> Any:
    """A value the resolver accepts, so that a hostile one beside it gets as far as it can."""
    inner = type_.of_type if isinstance(type_, GraphQLNonNull) else type_
    if isinstance(inner, GraphQLList):
        return [_plain(inner.of_type, name)]
    if isinstance(inner, GraphQLInputObjectType):
        return {n: _plain(f.type, n) for n, f in inner.fields.items() if _required(f.type, f.default_value)}
    if isinstance(inner, GraphQLEnumType):
        return next(iter(inner.values))
    return PLAIN_BY_NAME.get(name, PLAIN[inner.name])  # type: ignore[union-attr]


def _required(type_: GraphQLInputType, default: Any) -> bool:
    return isinstance(type_, GraphQLNonNull) and default is Undefined


def _replaced(plain: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A deep copy of `plain` with the value at `path` set (the input objects above it made as needed)."""
    copy = json.loads(json.dumps(plain))
    target = copy
    for name in path[:-1]:
        target = target.setdefault(name, {})
    target[path[-1]] = value
    return copy


def document(operation: str, name: str, field: GraphQLField) -> str:
    """`operation` calling root field `name` with every argument as a variable, selecting what it returns."""
    variables = ", ".join(f"${a}: {argument.type}{_default(argument)}" for a, argument in field.args.items())
    passed = ", ".join(f"{a}: ${a}" for a in field.args)
    return (f"{operation}{f'({variables})' if variables else ''} {{ {name}{f'({passed})' if passed else ''}"
            f"{selection(field.type, 4)} }}")  # fmt: skip


def _default(argument: GraphQLArgument) -> str:
    """The argument's default as the variable's (a variable of a non-null type with none would be required)."""
    if argument.default_value is Undefined:
        return ""
    value = ast_from_value(argument.default_value, argument.type)
    return f" = {print_ast(value)}" if value is not None else ""


def selection(type_: GraphQLOutputType, depth: int) -> str:
    """Every field down to `depth` that needs no argument (deprecated ones left out); `__typename` below that."""
    named = get_named_type(type_)
    if is_leaf_type(named):
        return ""
    if depth == 0 or not isinstance(named, GraphQLObjectType):
        return " { __typename }"
    parts = ["__typename"]
    for name, field in named.fields.items():
        needs_argument = any(isinstance(a.type, GraphQLNonNull) and a.default_value is Undefined
                             for a in field.args.values())  # fmt: skip
        if not needs_argument and not field.deprecation_reason:
            parts.append(name + selection(field.type, depth - 1))
    return " { " + " ".join(parts) + " }"


def body(query: str, variables: dict[str, Any]) -> bytes:
    return encode({"query": query, "variables": variables}).encode()


def encode(message: dict[str, Any]) -> str:
    """`message` as JSON: lone surrogates as \\ud800 escapes, NaN and Infinity as Python writes them, RAW numbers."""
    text = json.dumps(message)
    for marker, number in RAW.items():
        text = text.replace(f'"{marker}"', number)
    return text
