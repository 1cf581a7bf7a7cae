"""`newsagg topics relabel`: articles an earlier classifier labelled get the shipped one's topics, and their stories
are counted again."""

from __future__ import annotations

from sqlalchemy import text

from app.articles.relabel import relabel
from app.services import Services
from app.settings import Settings
from app.stories.service import cluster_articles
from tests.test_entities_api import ingest

SPORT = [("Liverpool beat Chelsea 2-0 in the Premier League", "Mohamed Salah scored twice as Liverpool won the match.")]
GERMAN = [(f"Liverpool schlägt Chelsea 2:0 in der Premier League {k}",
           "Mohamed Salah traf zweimal, als Liverpool das Spiel gewann.") for k in range(3)]  # fmt: skip


async def test_relabel_gives_old_guesses_no_topic_and_stories_their_topics(services: Services,
                                                                           settings: Settings) -> None:  # fmt: skip
    # given: a sports report and three German ones in one story, labelled as before: the German ones guessed "world"
    english = await ingest(services, settings, SPORT, tag="en")
    german = await ingest(services, settings, GERMAN, language="de", tag="de")
    placed = await cluster_articles(services.engine, english + german)
    async with services.db.begin() as session:
        [expected] = (
            await session.execute(text("SELECT topics FROM articles WHERE id = :id"), {"id": english[0]})
        ).one()
        await session.execute(text("UPDATE articles SET topics = '{world}' WHERE id = ANY(:ids)"), {"ids": german})
        await session.execute(text("UPDATE story_clusters SET topics = '{world}', primary_topic = 'world', "
                                   "topic_counts = '{\"world\": 4}'"))  # fmt: skip
    async with services.db() as session:
        last_event = await session.scalar(text("SELECT coalesce(max(id), 0) FROM outbox"))
    # when
    done = await relabel(services.engine, batch=2)
    # then
    assert (done.read, done.changed, done.stories) == (4, 3, len(set(placed.values())))
    async with services.db() as session:
        topics = {row.id: row.topics for row in await session.execute(text("SELECT id, topics FROM articles"))}
        story = (await session.execute(text("SELECT topics, primary_topic FROM story_clusters"))).all()
        told = await session.scalar(text("SELECT jsonb_agg(payload -> 'articles') FROM outbox "
                                         "WHERE id > :last AND topic = 'search' AND payload ->> 'inserted' = 'false'"),
                                    {"last": last_event})  # fmt: skip
    assert expected
    assert topics == {english[0]: expected, **{g: [] for g in german}}
    assert [tuple(s) for s in story] == [(expected, expected[0])]
    assert set(german) <= {article for ids in told for article in ids}  # the search index hears of the new topics
    assert (await relabel(services.engine)).changed == 0
