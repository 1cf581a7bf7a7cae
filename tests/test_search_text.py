"""PostgreSQL search reads an article's own text (app/extraction's article_texts): a word only in the body finds it,
below title and summary matches, in the article's language, as soon as the text arrives, capped for long pages, and
the hit's extract comes from the body when only the body matched."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import text, update
from sqlalchemy.ext.asyncio import AsyncEngine

from app.articles.models import Article
from app.db.migrate import upgrade
from app.extraction import repository as texts
from app.extraction.text import ExtractedArticle
from app.search.bodies import index_stored_bodies
from app.search.documents import TEXT_CHARS
from app.search.query import SearchQuery, SearchResult
from app.services import Services
from app.settings import Settings
from tests.conftest import GraphQLClient, statements_sent
from tests.newsroom import StorySpec, add_source, add_story

NOW = datetime.now(UTC)


async def article(services: Services, settings: Settings, title: str, *, summary: str = "", language: str = "en",
                  age: timedelta = timedelta(hours=1)) -> int:  # fmt: skip
    source = await add_source(services, settings, f"outlet-{title[:12]}", language=language)
    _, (article_id,) = await add_story(services, StorySpec(title, [source], languages=[language], age=age), NOW)
    if summary:
        async with services.db.begin() as db:
            await db.execute(update(Article).where(Article.id == article_id).values(summary=summary))
    return article_id


async def page_text(services: Services, article_id: int, body: str) -> None:
    async with services.db.begin() as db:
        await texts.save_page_text(db, article_id, ExtractedArticle(text=body, html=f"<p>{body}</p>"))


async def search(services: Services, words: str, *languages: str) -> SearchResult:
    return await services.search.search(SearchQuery(words, languages=languages), now=datetime.now(UTC), limit=20,
                                        offset=0)  # fmt: skip


async def found(services: Services, words: str, *languages: str) -> list[int]:
    return [hit.article_id for hit in (await search(services, words, *languages)).hits]


async def test_a_word_only_in_the_body_is_found_and_its_extract_comes_from_the_body(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    quiet = await article(services, settings, "Council meets on Tuesday", summary="The agenda is published.")
    await page_text(services, quiet, "The meeting opened late. " * 30 + "A zeppelin was seen over the harbour. "
                    + "Members then discussed the budget. " * 30)  # fmt: skip
    assert await found(services, "zeppelin") == [quiet]
    hit = (await gql.run("Search", query="zeppelin", first=5))["search"]["edges"][0]["node"]
    assert hit["titleHighlight"] == "Council meets on Tuesday"
    assert "A <mark>zeppelin</mark> was seen over the harbour" in hit["summaryHighlight"]
    # a summary match keeps its summary extract
    hit = (await gql.run("Search", query="agenda", first=5))["search"]["edges"][0]["node"]
    assert hit["summaryHighlight"] == "<mark>agenda</mark> is published"  # (ts_headline trims stop words)


async def test_title_matches_rank_above_summary_matches_above_body_only_matches(
    services: Services, settings: Settings
) -> None:
    in_body = await article(services, settings, "Markets close higher", summary="Shares rose.")
    await page_text(services, in_body, "Tariff tariff tariff. " * 200)  # however often the body repeats it
    in_summary = await article(services, settings, "Ports are busy", summary="A new tariff takes effect.")
    in_title = await article(services, settings, "Tariff takes effect", summary="Ports are busy.")
    ranked = await search(services, "tariff")
    assert [hit.article_id for hit in ranked.hits] == [in_title, in_summary, in_body]
    assert ranked.hits[0].score > ranked.hits[1].score > ranked.hits[2].score


async def test_bodies_in_german_russian_and_chinese_are_found_by_their_words(
    services: Services, settings: Settings
) -> None:
    german = await article(services, settings, "Bericht aus Berlin", language="de")
    await page_text(services, german, "Die Wahlergebnisse der Landtagswahlen wurden am Abend veröffentlicht.")
    russian = await article(services, settings, "Новости из Москвы", language="ru")
    await page_text(services, russian, "Парламент обсудил новые законы о выборах в регионах.")  # noqa: RUF001
    chinese = await article(services, settings, "今日新闻", language="zh")
    await page_text(services, chinese, "北京市政府今天宣布了新的公共交通政策，地铁票价将调整。")  # noqa: RUF001
    assert await found(services, "Wahlergebnis", "de") == [german]  # stemmed in German
    assert await found(services, "Landtagswahlen") == [german]  # its exact word, whatever the query's language
    assert await found(services, "выборы", "ru") == [russian]  # the body says "выборах": stemmed, one word
    assert await found(services, "законы") == [russian]
    assert await found(services, "交通政策") == [chinese]  # a word inside a CJK run (bigrams)
    assert await found(services, "地铁") == [chinese]
    assert await found(services, "Wahlergebnis", "ru") == []  # not stemmed in a language it is not in


async def test_an_article_whose_text_arrives_later_becomes_findable_by_its_body(
    services: Services, settings: Settings
) -> None:
    waiting = await article(services, settings, "Storm warning issued")
    assert await found(services, "anemometer") == []
    await page_text(services, waiting, "The anemometer at the lighthouse broke at 140 km/h.")
    assert await found(services, "anemometer") == [waiting]
    await page_text(services, waiting, "The forecast was revised overnight.")  # the page fetched again, changed
    assert await found(services, "anemometer") == []
    assert await found(services, "overnight") == [waiting]


async def test_the_body_follows_a_language_detected_after_the_text_arrived(
    services: Services, settings: Settings
) -> None:
    # a feed's text is stored with the article; language detection sets its language afterwards
    arrived = await article(services, settings, "Nachrichten", language="en")
    await page_text(services, arrived, "Die Regierungen haben sich geeinigt.")
    assert await found(services, "Regierung", "de") == []  # stemmed as English, "regierungen" stays itself
    async with services.db.begin() as db:
        await db.execute(update(Article).where(Article.id == arrived).values(language="de"))
    assert await found(services, "Regierung", "de") == [arrived]


async def test_a_2_mb_body_is_indexed_up_to_the_cap(services: Services, settings: Settings) -> None:
    long_page = await article(services, settings, "Annual report published")
    opening = "The auditors praised the transparency of the accounts. "
    filler = "figures " * ((TEXT_CHARS - len(opening)) // len("figures ") + 1)
    body = opening + filler + "Quokka appears only after the cap. " + "words " * (2 * 1024 * 1024 // 6)
    assert len(body) > 2 * 1024 * 1024
    await page_text(services, long_page, body)
    cjk_page = await article(services, settings, "年度报告", language="zh")
    await page_text(services, cjk_page, "审计报告显示透明度很高。" + "数据" * (1024 * 1024))  # 2 M characters of CJK
    assert await found(services, "auditors transparency") == [long_page]
    assert await found(services, "quokka") == []  # past the first TEXT_CHARS characters
    assert await found(services, "透明度") == [cjk_page]
    async with services.db.begin() as db:
        vectors = text(
            "SELECT pg_column_size(newsagg_body_vector(search_language, text)) FROM article_texts "
            "WHERE search_language IS NOT NULL"
        )
        sizes = (await db.execute(vectors)).scalars().all()
    assert len(sizes) == 2
    assert max(sizes) < 200_000  # bounded by the cap, not by the page


SOURCE = """INSERT INTO sources (feed_url, name, kind, min_interval_s, max_interval_s, status)
            VALUES ('http://127.0.0.1:9/feed', 'Feed', 'rss', 300, 3600, 'active')"""
ARTICLE = """INSERT INTO articles (source_id, external_id, url, title, summary, published_at, content_hash, language,
                                   topics)
             SELECT id, 'a' || n, 'https://news.example/' || n, 'Headline ' || n, '', now(), n, 'fr', '{world}'
             FROM sources, generate_series(1, 1200) AS n"""
TEXTS = """INSERT INTO article_texts (article_id, origin, text, html, word_count)
           SELECT id, 'page', CASE WHEN id % 2 = 0 THEN 'Les élections municipales ' || id ELSE '' END, '', 3
           FROM articles"""


async def matching(engine: AsyncEngine, words: str) -> int:
    async with engine.connect() as db:
        return int(
            await db.scalar(
                text(
                    "SELECT count(*) FROM article_texts WHERE search_language IS NOT NULL AND "
                    "newsagg_body_vector(search_language, text) @@ "
                    "websearch_to_tsquery(newsagg_ts_config('fr'), :words)"
                ),
                {"words": words},
            )
        )


async def test_texts_stored_before_the_upgrade_are_indexed_by_the_worker_in_batches(
    scratch_engine: AsyncEngine,
) -> None:
    await upgrade(scratch_engine, "0020")
    async with scratch_engine.begin() as db:
        for statement in (SOURCE, ARTICLE, TEXTS):
            await db.execute(text(statement))
    await upgrade(scratch_engine)
    assert await matching(scratch_engine, "élection") == 0  # the migration leaves them to the worker
    async with scratch_engine.begin() as db:  # a text written after the upgrade: the triggers index it at once
        await db.execute(text("UPDATE article_texts SET text = 'Les élections régionales' WHERE article_id = 1"))
    assert await matching(scratch_engine, "élection") == 1
    assert await index_stored_bodies(scratch_engine, batch=250) == 600  # three batches, each committed
    assert await matching(scratch_engine, "élection") == 601
    with statements_sent(scratch_engine) as sent:
        assert await index_stored_bodies(scratch_engine) == 0  # nothing left
    assert len(sent) == 1  # a worker's next start asks whether any are left, and reads no text's row
    async with scratch_engine.connect() as db:
        plan = "\n".join(await db.scalars(text(f"EXPLAIN {sent[0]}")))
    assert "ix_article_texts_unindexed" in plan, plan


# what 0010's newsagg_cjk_bigrams made of them: 0027 makes it linear in time, its output unchanged
BIGRAMS = {"北京": " 北京 ", "北": " 北", "a北b": "a 北 b", "北京市 政府": " 北京 京市   政府 ", "x北京y": "x 北京 y",
           "東京でAI会議": " 東京 京で AI 会議 ", "ab": "ab", "": "", "北a京": " 北 a 京",
           "한국어 뉴스": " 한국 국어   뉴스 "}  # fmt: skip


async def test_cjk_runs_become_the_same_bigrams_as_before(services: Services) -> None:
    async with services.db.begin() as db:
        made = {s: await db.scalar(text("SELECT newsagg_cjk_bigrams(:s)"), {"s": s}) for s in BIGRAMS}
    assert made == BIGRAMS
