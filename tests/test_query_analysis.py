"""Documents are priced in one pass linear in their size: depth, aliases, fragment spreads, GitHub's nodes and cost."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from graphql.utilities import value_from_ast_untyped
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from strawberry.extensions import QueryDepthLimiter
from strawberry.extensions.max_aliases import count_fields_with_alias
from strawberry.extensions.validation_cache import _get_validate_cache

from app.api.analysis.cost import QUERY_COST, QUERY_NODES, cost_refusal, price
from app.api.analysis.rule import shape_refusals, shape_rule
from app.api.analysis.summary import Analysis, Summary
from app.api.context import Context
from app.api.queue import JobQueue
from app.api.schema import build_schema
from app.services import Services
from app.settings import Settings
from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLNamedType,
    GraphQLObjectType,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionNode,
    get_introspection_query,
    get_named_type,
    parse,
    validate,
)
from tests.conftest import GRAPHQL_DIR, GraphQLClient, subscribe_ws

DEFAULTS = Settings(_env_file=None)  # type: ignore[call-arg]
SCHEMA = build_schema(DEFAULTS)._schema


def fan_out(levels: int) -> str:
    """The issue's document: each fragment spreads the previous one twice."""
    fragments = [f"fragment F{k} on Article {{ ...F{k - 1} ...F{k - 1} }}" for k in range(2, levels + 1)]
    operation = f"{{ articles {{ edges {{ node {{ ...F{levels} }} }} }} }}"
    return " ".join([operation, "fragment F1 on Article { id title }", *fragments])


def deep(levels: int) -> str:
    nested = "representative { story { " * levels + "id" + " } }" * levels
    return "{ stories(first: 1) { edges { node { " + nested + " } } } }"


def alias_flood(count: int) -> str:
    return "{ " + " ".join(f"a{i}: articles(first: 100) {{ edges {{ node {{ id }} }} }}" for i in range(count)) + " }"


FAMILIES: dict[str, Callable[[int], str]] = {"fan-out": fan_out, "deep": deep, "aliases": alias_flood}


def analysed(text: str, variables: dict[str, Any] | None = None) -> tuple[Summary, int, int]:
    """The operation's figures, the analysis's work and the document's size (its selections)."""
    document = parse(text)
    operation = next(d for d in document.definitions if isinstance(d, OperationDefinitionNode))
    analysis = Analysis(SCHEMA, document, lambda node, definition: None)
    analysis.operation(operation)
    return price(SCHEMA, document, operation, variables, DEFAULTS), analysis.work, selections_in(document)


def selections_in(document: DocumentNode) -> int:
    pending = [d.selection_set for d in document.definitions if hasattr(d, "selection_set")]
    count = 0
    while pending:
        for selection in pending.pop().selections:
            count += 1
            if isinstance(selection, FieldNode | InlineFragmentNode) and selection.selection_set:
                pending.append(selection.selection_set)
    return count


async def test_the_fan_out_document_is_refused_and_the_api_keeps_answering(gql: GraphQLClient, api_url: str) -> None:
    document = fan_out(30)
    assert len(document) < 1400
    body = await gql.post(document)
    assert body.get("data") is None
    [error] = body["errors"]
    assert error["extensions"]["code"] == "TOO_MANY_FRAGMENT_SPREADS"
    assert "1,073,741,823 fragment spreads" in error["message"]
    assert "at most 100" in error["message"]
    _summary, work, size = analysed(document)
    assert work <= 2 * size == 2 * 64  # the refusal read each of the document's 64 selections at most twice
    async with httpx.AsyncClient() as client:
        assert (await client.get(f"{api_url}/healthz")).status_code == 200


@hypothesis_settings(max_examples=60, deadline=None)
@given(family=st.sampled_from(sorted(FAMILIES)), size=st.integers(1, 95))
def test_work_is_linear_in_the_document(family: str, size: int) -> None:
    summary, work, selections = analysed(FAMILIES[family](size))
    assert work <= 2 * selections  # each selection once, a fragment's twice (its spreads first, then its figures)
    assert selections <= 4 * size + 4
    expected = {"fan-out": Summary(3, 0, 2**size - 1, 20, 1), "deep": Summary(2 * size + 3, 0, 0, 1, 1),
                "aliases": Summary(3, size, 0, 100 * size, size)}  # fmt: skip
    assert summary == expected[family]


async def test_each_limit_is_a_typed_refusal_with_its_figures(gql: GraphQLClient) -> None:
    refusals = {
        deep(5): ("QUERY_TOO_DEEP", "13 levels deep; at most 12"),
        alias_flood(31): ("TOO_MANY_ALIASES", "31 aliases; at most 30"),
        fan_out(7): ("TOO_MANY_FRAGMENT_SPREADS", "127 fragment spreads"),
        "{ stories(first: 100) { edges { node { articles(first: 100) { story { articles(first: 100) { id } } } } } } }":
            ("QUERY_TOO_COMPLEX", "up to 1,010,100 nodes; at most 20,000"),
    }  # fmt: skip
    for document, (code, figures) in refusals.items():
        [error] = (await gql.post(document))["errors"]
        assert (error["extensions"]["code"], figures in error["message"]) == (code, True), error
    for document in (deep(4), alias_flood(30), fan_out(6)):
        assert not (await gql.post(document)).get("errors")


async def test_a_cost_over_the_limit_is_refused_before_it_runs() -> None:
    narrow = analysed("{ stories(first: 100) { edges { node { articles(first: 3) { id } } } } }")[0]
    assert (narrow.requests, narrow.github_cost, narrow.nodes, narrow.cost(100)) == (101, 1, 400, 4)
    wide = "{ stories(first: 100) { edges { node { a: articles(first: 3) { id } b: articles { id } } } } }"
    assert (analysed(wide)[0].github_cost, analysed(wide)[0].cost(100)) == (2, 24)  # 201 requests, 2,400 nodes
    for nodes_per_point, points in ((100, 24), (10**6, 2)):  # the nodes' price, else GitHub's
        tuned = Settings(_env_file=None, query_max_cost=1, query_nodes_per_point=nodes_per_point)  # type: ignore[call-arg]
        result = await build_schema(tuned).execute(wide)
        assert result.errors
        assert result.errors[0].extensions == {"code": "QUERY_TOO_COMPLEX"}
        assert f"costs {points} points; at most 1" in result.errors[0].message


def test_figures_of_hand_written_documents() -> None:
    document = """query($n: Int, $m: Int = 7) {
      stories(first: $n) { edges { node { articles(first: $m) { story { coverage { totalCount } } } } } }
      a: articles(first: 500) { totalCount } b: trending { id: score } }"""
    # stories: n x (1 + m x (1 + 20)); articles: capped at 100; trending: a list paged by `first`, default 20
    assert analysed(document, {"n": 10})[0] == Summary(6, 3, 0, 10 * (1 + 7 * 21) + 100 + 20, 1 + 10 * (1 + 7) + 2)
    assert analysed(document, {"n": 10, "m": 0})[0].nodes == 10 + 100 + 20
    assert analysed(document, {})[0].nodes == 20 * (1 + 7 * 21) + 120  # an omitted variable: the default page
    assert analysed(document, {"n": "ten", "m": True})[0].nodes == 20 * (1 + 20 * 21) + 120
    assert analysed(document, {"n": -5})[0].nodes == 120
    assert [analysed(document, {"n": n, "m": 1})[0].github_cost for n in (1, 73, 74)] == [1, 1, 2]  # 5, 149, 151
    assert analysed(document, {"n": 100, "m": 100})[0].github_cost == 101  # 1 + 100 x (1 + 100) + 2 requests
    # the price is the nodes' when more: 100 nodes a point, rounded up
    assert [analysed(document, {"n": n, "m": 1})[0].cost(100) for n in (0, 3, 4)] == [2, 2, 3]  # 120, 186, 208 nodes
    assert analysed(document, {"n": 100, "m": 100})[0].cost(100) == 2103  # 100 x (1 + 100 x 21) + 120 nodes


def test_the_thirty_alias_page_flood_is_priced_by_its_nodes() -> None:
    """30 pages of 100 are 30 connections requested, 1 point by GitHub's rule alone; their 3,000 nodes are 30."""
    summary = analysed(alias_flood(30))[0]
    assert (summary.aliases, summary.nodes, summary.requests, summary.github_cost) == (30, 3000, 30, 1)
    assert [analysed(alias_flood(n))[0].cost(100) for n in (1, 2, 30)] == [1, 2, 30]
    assert analysed(alias_flood(30))[0].cost(1000) == 3


def test_fragment_cycles_end() -> None:
    cyclic = "{ article(id: 1) { ...A } } fragment A on Article { id ...B } fragment B on Article { story { id } ...A }"
    summary, work, size = analysed(cyclic)
    assert work <= 2 * size
    assert summary.spreads == 3
    assert [e.message for e in validate(SCHEMA, parse(cyclic))] == ["Cannot spread fragment 'A' within itself via 'B'."]


def test_the_documents_clients_copy_and_introspection_pass_and_cost_little() -> None:
    """One point each, but Stories: 20 stories, 5 outlets of each's coverage and an article of each outlet are 220
    nodes, 3 points (at pages of 100, 1,100 nodes, 11 points); and StoryCoverage: 20 outlets, 10 articles of each and
    5 copies of each article are 1,220 nodes, 13 points (61 at 100 outlets)."""
    introspection = get_introspection_query(descriptions=True, specified_by_url=True, input_value_deprecation=True)
    documents = {p.stem: p.read_text() for p in sorted(GRAPHQL_DIR.glob("*.graphql"))}
    documents["introspection"] = introspection
    prices: dict[int | None, dict[str, int]] = {None: {}, 100: {}}
    for name, text in documents.items():
        assert not validate(SCHEMA, parse(text), [shape_rule(DEFAULTS)])
        for first, costly in prices.items():
            summary = analysed(text, {"first": first})[0]
            if summary.cost(DEFAULTS.query_nodes_per_point) > 1:
                costly[name] = summary.cost(DEFAULTS.query_nodes_per_point)
    assert prices == {None: {"Stories": 3, "StoryCoverage": 13}, 100: {"Stories": 11, "StoryCoverage": 61}}


def test_an_outlet_s_articles_and_an_article_s_copies_are_priced_as_pages() -> None:
    """A story's coverage lists its outlets, their articles and the articles' copies: each list is a page, `first`
    as asked or its own default (10 articles of an outlet, 5 copies of an article), so a story with 10,000 copies of
    one article costs what the page asks for, and a page of 100 x 100 x 100 is refused."""
    document = """query($n: Int, $m: Int) { story(id: 1) { coverage(first: $n) { edges { node { articleCount
        articles(first: $m) { copyCount copies { id } } } } } } }"""
    assert analysed(document, {"n": 3, "m": 2})[0].nodes == 3 * (1 + 2 * (1 + 5))
    assert analysed(document, {"n": 3})[0].nodes == 3 * (1 + 10 * (1 + 5))
    widest = """{ story(id: 1) { coverage(first: 100) { edges { node {
        articles(first: 100) { copies(first: 100) { id } } } } } } }"""
    assert analysed(widest)[0].nodes == 100 * (1 + 100 * (1 + 100))
    assert cost_refusal(analysed(widest)[0], DEFAULTS) is not None


async def test_each_request_is_priced_from_its_variables_with_validation_cached(
    services: Services, settings: Settings
) -> None:
    schema = build_schema(settings.model_copy(update={"graphql_cache_size": 5}))
    document = "query($n: Int) { stories(first: $n) { edges { node { articles(first: 100) { id } } } } }"
    _get_validate_cache(5).cache_clear()
    prices = []
    for n in (1, 50, None):
        context = Context.create(services, JobQueue(settings))
        result = await schema.execute(document, {"n": n}, context_value=context)
        assert not result.errors
        prices.append((context.extra[QUERY_COST], context.extra[QUERY_NODES]))
    assert prices == [(2, 101), (51, 5050), (21, 2020)]  # 100 nodes a point
    assert _get_validate_cache(5).cache_info().hits == 2


# Random documents over a corner of the schema: the figures must be those of a naive walk of the inlined document.
LEAVES = {"Article": ["id", "title", "__typename"], "Story": ["id", "title"], "Source": ["id", "name"]}
OBJECTS = {"Article": [("source", "Source", False), ("story", "Story", False)],
           "Story": [("articles", "Article", True), ("representative", "Article", False)], "Source": []}  # fmt: skip


@st.composite
def documents(draw: st.DrawFn) -> str:
    aliases = itertools.count()
    fragments: list[tuple[str, str]] = []

    def selection(on: str, budget: int) -> str:
        items = []
        for _ in range(draw(st.integers(1, 3))):
            kind = draw(st.sampled_from(["leaf", "object", "spread", "inline"]))
            alias = f"a{next(aliases)}: " if draw(st.booleans()) else ""
            spreadable = [name for name, condition in fragments if condition == on]
            if kind == "object" and budget and OBJECTS[on]:
                name, inner, paged = draw(st.sampled_from(OBJECTS[on]))
                first = f"(first: {draw(st.integers(0, 120))})" if paged and draw(st.booleans()) else ""
                items.append(f"{alias}{name}{first} {{ {selection(inner, budget - 1)} }}")
            elif kind == "spread" and spreadable:
                items.append("..." + draw(st.sampled_from(spreadable)))
            elif kind == "inline" and budget:
                items.append(f"... on {on} {{ {selection(on, budget - 1)} }}")
            else:
                items.append(alias + draw(st.sampled_from(LEAVES[on])))
        return " ".join(items)

    definitions = []
    for number in range(draw(st.integers(0, 4))):
        on = draw(st.sampled_from(["Article", "Story"]))
        definitions.append(f"fragment F{number} on {on} {{ {selection(on, 2)} }}")
        fragments.append((f"F{number}", on))  # after its body: a fragment spreads only earlier ones
    operation = f"{{ stories(first: 30) {{ edges {{ node {{ {selection('Story', 3)} }} }} }} }}"
    return " ".join([operation, *definitions])


def naive(selections: tuple[SelectionNode, ...], on: GraphQLNamedType | None, document: DocumentNode) -> list[int]:
    """Nodes, requests and spreads, following every spread again (exponential: small documents only)."""
    fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
    total = [0, 0, 0]
    for selection in selections:
        if isinstance(selection, FragmentSpreadNode):
            fragment = fragments[selection.name.value]
            inner = naive(fragment.selection_set.selections, SCHEMA.get_type(fragment.type_condition.name.value),
                          document)  # fmt: skip
            total = [total[0] + inner[0], total[1] + inner[1], total[2] + inner[2] + 1]
        elif isinstance(selection, InlineFragmentNode):
            total = [a + b for a, b in zip(total, naive(selection.selection_set.selections, on, document), strict=True)]
        elif isinstance(selection, FieldNode) and isinstance(on, GraphQLObjectType):
            field = on.fields.get(selection.name.value)
            below = selection.selection_set.selections if selection.selection_set else ()
            nodes, requests, spreads = naive(below, get_named_type(field.type) if field else None, document)
            if field and "first" in field.args:
                given = [value_from_ast_untyped(a.value) for a in selection.arguments or () if a.name.value == "first"]
                page = min(given[0], 100) if given else 20
                nodes, requests = page * (1 + nodes), 1 + page * requests
            total = [total[0] + nodes, total[1] + requests, total[2] + spreads]
    return total


@hypothesis_settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=documents())
def test_figures_match_a_naive_walk_of_the_inlined_document(text: str) -> None:
    summary, work, size = analysed(text)
    assert work <= 2 * size
    document = parse(text)
    operation = next(d for d in document.definitions if isinstance(d, OperationDefinitionNode))
    assert [summary.nodes, summary.requests, summary.spreads] == naive(
        operation.selection_set.selections, SCHEMA.query_type, document
    )
    depths: dict[str, int] = {}
    validate(SCHEMA, document, QueryDepthLimiter(max_depth=10**6, callback=depths.update).validation_rules)
    fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
    assert (summary.depth, summary.aliases) == (depths["anonymous"], count_fields_with_alias(operation, fragments))


@pytest.mark.parametrize("levels", [16, 20, 30])
async def test_fan_out_refusals_read_the_document_once(levels: int) -> None:
    result = await build_schema(DEFAULTS).execute(fan_out(levels))
    assert result.errors
    assert result.errors[0].extensions == {"code": "TOO_MANY_FRAGMENT_SPREADS"}
    _summary, work, size = analysed(fan_out(levels))
    assert size == 2 * levels + 4
    assert work <= 2 * size


async def test_over_websocket_the_same_refusals(api_url: str, services: Services) -> None:
    too_many_nodes = "{ stories(first: 100) { edges { node { articles(first: 100) { story { articles(first: 100) "
    for document, code in ((too_many_nodes + "{ id } } } } } } }", "QUERY_TOO_COMPLEX"),
                           (fan_out(30), "TOO_MANY_FRAGMENT_SPREADS")):  # fmt: skip
        stream = subscribe_ws(api_url, document, {})
        message = await anext(stream)
        await stream.aclose()
        errors = message["payload"] if message["type"] == "error" else message["payload"]["errors"]
        assert [error["extensions"]["code"] for error in errors] == [code]


def test_a_count_too_long_to_print_is_still_a_message() -> None:
    [error] = shape_refusals(Summary(spreads=2**20_000), DEFAULTS)  # 6,021 digits: str() refuses past 4,300
    assert error.message == "the operation has over 10^30 fragment spreads, each counted where its fragment is used; " \
        "at most 100 are allowed"  # fmt: skip
