"""Named entities through ingest and the API: stored when articles are understood (or backfilled), shown on articles
and stories without N+1, trending by velocity with topic and language filters; and their evaluation."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import text

from app.api.analysis.cost import price
from app.api.schema import build_schema
from app.articles.repository import NewArticle, insert_new
from app.articles.understanding import understand_articles
from app.entities import repository as entity_repository
from app.entities.backfill import backfill
from app.entities.evaluation import evaluate as evaluate_entities
from app.entities.service import trending_entities
from app.services import Services
from app.settings import Settings
from app.sources.service import SourceRequest, create_source
from app.stories.service import cluster_articles
from app.trending.windows import TrendingWindow
from graphql import OperationDefinitionNode, parse
from tests.conftest import GraphQLClient, document, statements_per_page
from tests.newsroom import global_id

NAVALNY = [
    ("Navalny poisoned with Novichok, Germany says",
     "Chancellor Angela Merkel said tests showed Russian opposition leader Alexei Navalny was poisoned."),
    ("Merkel: Navalny was poisoned with Novichok nerve agent",
     "Angela Merkel demanded answers from Russia after German military tests on Alexei Navalny."),
    ("Germany says Navalny poisoning proven, Merkel demands answers",
     "Alexei Navalny was attacked with a Novichok agent, Angela Merkel told reporters in Berlin."),
]  # fmt: skip


async def ingest(services: Services, settings: Settings, items: list[tuple[str, str]], *, ago: timedelta =
                 timedelta(0), language: str | None = "en", tag: str = "a") -> list[int]:  # fmt: skip
    """One article per (title, summary), each from its own outlet, arrived `ago` before now, then understood (copies
    of one text would be marked as such, and trends count no copies)."""
    ids = []
    arrived = datetime.now(UTC) - ago
    async with services.db.begin() as session:
        for k, (title, summary) in enumerate(items):
            source = await create_source(session, settings, SourceRequest(
                feed_url=f"http://127.0.0.1:9/{tag}{k}", name=f"Outlet {tag}{k}", language=language))  # fmt: skip
            new = NewArticle(source.id, f"{tag}{k}", f"https://{tag}{k}.example/", title, summary, None, arrived, k)
            ids += [a.id for a in await insert_new(session, [new])]
        await session.execute(text("UPDATE articles SET crawled_at = :at WHERE id = ANY(:ids)"),
                              {"at": arrived, "ids": ids})  # fmt: skip
    await understand_articles(services.engine, ids, now=datetime.now(UTC))
    return ids


async def test_understood_articles_store_their_entities(services: Services, settings: Settings) -> None:
    [article] = await ingest(services, settings, NAVALNY[:1])
    async with services.db() as session:
        rows = (await session.execute(text(
            "SELECT key, name, kind, mentions, role FROM article_entities WHERE article_id = :id ORDER BY key"),
            {"id": article})).all()  # fmt: skip
    assert [tuple(r) for r in rows] == [
        ("loc:germany", "Germany", "LOC", 1, None),
        ("per:alexei navalny", "Alexei Navalny", "PER", 2, None),
        ("per:angela merkel", "Angela Merkel", "PER", 1, "chancellor"),
    ]


async def test_articles_and_stories_show_entities_without_n_plus_one(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    ids = await ingest(services, settings, NAVALNY)
    placed = await cluster_articles(services.engine, ids)
    [story] = set(placed.values())
    body = await gql.run("StoryEntities", id=global_id("Story", story), first=3)
    entities = body["story"]["entities"]
    assert [(e["name"], e["kind"], e["mentions"]) for e in entities] == [
        ("Alexei Navalny", "PERSON", 3), ("Angela Merkel", "PERSON", 3), ("Germany", "PLACE", 2)]  # fmt: skip
    assert entities[1]["role"] == "chancellor"
    assert {e["name"] for e in body["story"]["representative"]["entities"]} >= {"Alexei Navalny", "Angela Merkel"}
    query = "query($n: Int) { articles(first: $n) { edges { node { entities { key } story { entities { key } } } } } }"
    # articles, their entities, their stories, the stories' entities
    assert await statements_per_page(gql, services, query, (1, 3)) == [4, 4]


async def test_trending_entities_rank_by_velocity_with_filters(gql: GraphQLClient, services: Services,
                                                               settings: Settings) -> None:  # fmt: skip
    # given: Scholz named steadily for hours, Navalny and Merkel only now, and a French headline about Macron
    steady = [(f"Olaf Scholz {what}", "") for what in ("visits Hamburg port", "opens a school in Cologne",
              "meets farmers over diesel tax", "defends the budget in parliament", "speaks at a car factory",
              "answers questions from readers", "calls for calm after the storm")]  # fmt: skip
    for hours in (2, 3, 4):
        await ingest(
            services, settings, steady[hours * 2 - 4 : hours * 2 - 2], ago=timedelta(hours=hours), tag=f"{hours}"
        )
    await ingest(services, settings, steady[-1:], ago=timedelta(minutes=5), tag="now-")
    await ingest(services, settings, NAVALNY[:2], ago=timedelta(minutes=10), tag="nav-")
    french_news = [("Emmanuel Macron reçoit les maires de France à l'Élysée",
               "Le président Emmanuel Macron a reçu mardi les maires de France au palais de l'Élysée.")]  # fmt: skip
    [macron] = await ingest(services, settings, french_news, ago=timedelta(minutes=20), language="fr", tag="fr-")
    async with services.db.begin() as session:
        await session.execute(text("UPDATE articles SET topics = CASE WHEN id = :id THEN '{politics}'::varchar[] "
                                   "ELSE '{world}'::varchar[] END"), {"id": macron})  # fmt: skip
    # when / then
    found = (await gql.run("TrendingEntities"))["trendingEntities"]
    assert [t["entity"]["name"] for t in found[:2]] == ["Alexei Navalny", "Angela Merkel"]
    assert (found[0]["velocity"], found[0]["score"], found[0]["previous"]) == (2.0, 2.0, 0)
    assert all(t["score"] > 0 for t in found)
    async with services.db() as session:  # ranked and cut by PostgreSQL: one row leaves it when one is asked for
        top = await trending_entities(session, TrendingWindow.HOUR, now=datetime.now(UTC), languages=[], topics=[],
                                      limit=1)  # fmt: skip
    assert [(t.mentions.entity.name, t.score) for t in top] == [("Alexei Navalny", 2.0)]
    assert "Olaf Scholz" not in {
        t["entity"]["name"] for t in found
    }  # one now, where six in the four hours before predict 1.5
    day = (await gql.run("TrendingEntities", window="DAY"))["trendingEntities"]
    scholz = next(t for t in day if t["entity"]["name"] == "Olaf Scholz")  # all seven in the day, none before it
    assert (scholz["entity"]["mentions"], scholz["previous"], scholz["score"]) == (7, 0, 7.0)
    assert len((await gql.run("TrendingEntities", first=2))["trendingEntities"]) == 2
    french = {"per:emmanuel macron", "loc:france"}
    assert {t["entity"]["key"] for t in (await gql.run("TrendingEntities", languages=["fr"]))["trendingEntities"]} \
        == french  # fmt: skip
    politics = (await gql.run("TrendingEntities", topics=["POLITICS"], window="DAY"))["trendingEntities"]
    assert {t["entity"]["key"] for t in politics} == french


async def test_trending_entities_refuse_bad_input(gql: GraphQLClient) -> None:
    for window in ("FIFTEEN_MINUTES", "HOUR", "SIX_HOURS", "DAY"):  # nothing named yet: an empty list, no error
        assert (await gql.run("TrendingEntities", window=window, topics=["SPORTS"]))["trendingEntities"] == []
    bad_language = await gql.post(document("TrendingEntities"), {"languages": ["not a code"]})
    assert bad_language["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    too_many = await gql.post(document("TrendingEntities"), {"first": 10_000})
    assert too_many["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert (await gql.post(document("TrendingEntities"), {"topics": ["NOPE"]}))["errors"]


def test_entity_lists_are_priced_as_pages(settings: Settings) -> None:
    """`Story.entities(first:)` is a page per story, like coverage: 20 stories of 100 entities are 2,000 nodes."""
    query = "{ stories(first: 20) { edges { node { entities(first: 100) { key } } } } trendingEntities { score } }"
    parsed = parse(query)
    operation = next(d for d in parsed.definitions if isinstance(d, OperationDefinitionNode))
    summary = price(build_schema(settings)._schema, parsed, operation, {}, settings)
    assert summary.nodes == 20 * (1 + 100) + settings.page_size_default


async def test_backfill_gives_older_articles_their_entities(services: Services, settings: Settings) -> None:
    # given: understood articles whose entities are not stored (as before entities were extracted)
    ids = await ingest(services, settings, NAVALNY)
    async with services.db.begin() as session:
        await session.execute(text("DELETE FROM article_entities WHERE article_id <> :id"), {"id": ids[0]})
    # when
    read = await backfill(services.engine, batch=1)
    # then: the two without any are read, and now name who they named
    assert read == 2
    async with services.db() as session:
        stored = await entity_repository.of_articles(session, ids)
    assert all("per:alexei navalny" in {e.key for e in stored[i]} for i in ids)
    assert await backfill(services.engine) == 0


def test_the_evaluation_scores_each_kind(tmp_path: Path) -> None:
    labelled = [
        {"title": "Angela Merkel visits Paris", "entities": [["Angela Merkel", "PER"], ["Paris", "LOC"]]},
        {"title": "Kodak CEO Jim Continenza sells", "summary": "", "language": "en",
         "entities": [["Kodak", "ORG"], ["Jim Continenza", "PER"], ["Rochester", "LOC"]]},
    ]  # fmt: skip
    path = tmp_path / "labelled.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in labelled))
    result = evaluate_entities(path)
    assert result["PER"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "gold": 2}
    assert result["LOC"] == {"precision": 1.0, "recall": 0.5, "f1": 0.667, "gold": 2}
    assert result["articles"] == 2
