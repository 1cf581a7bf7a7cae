"""Keyword search through the API on PostgreSQL full text: operators, highlights, filters, one hit per story,
paging, and bad queries answered with typed errors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text, update

from app.api.relay import decode_cursor, encode_cursor
from app.api.search import CURSOR
from app.articles.models import Article
from app.search import terms
from app.search.postgres import PostgresSearch
from app.search.query import SearchQuery, SearchResult
from app.search.service import Search
from app.search.sync import sync_pending
from app.search.windows import WALK_ROWS, LastDay, Windows
from app.services import Services
from app.settings import Settings
from app.topics.keywords import TOPICS
from tests.conftest import GraphQLClient, document
from tests.newsroom import StorySpec, add_source, add_story, search_newsroom


async def titles(gql: GraphQLClient, query: str, **variables: Any) -> list[str]:
    found = (await gql.run("Search", query=query, first=50, **variables))["search"]["edges"]
    return [edge["node"]["article"]["title"] for edge in found]


async def test_hits_carry_their_story_and_highlights(gql: GraphQLClient, services: Services,
                                                     settings: Settings) -> None:  # fmt: skip
    await search_newsroom(services, settings)
    found = (await gql.run("Search", query="insurance", first=1))["search"]
    assert found["approximate"] is False
    hit = found["edges"][0]["node"]
    assert hit["titleHighlight"] == "Rates of flood <mark>insurance</mark> climb"
    assert hit["story"]["sourceCount"] == 1
    outlets = (await gql.run("Search", query="valencia", groupByStory=True))["search"]["edges"]
    assert [e["node"]["story"]["sourceCount"] for e in outlets] == [4]
    assert [e["node"]["matchesInStory"] for e in outlets] == [4]


async def test_filters_grouping_sorting_and_pages(gql: GraphQLClient, services: Services, settings: Settings) -> None:
    await search_newsroom(services, settings)
    assert await titles(gql, "rates", topics=["WORLD"]) == []
    assert await titles(gql, "rates", languages=["fr"]) == ["Rates of flood insurance climb"]
    assert await titles(gql, "rates", freshness="WEEK") == ["Rates of flood insurance climb"]
    week_ago = (datetime.now(UTC) - timedelta(days=7)).isoformat()
    assert len(await titles(gql, "rates", to=week_ago)) == 2
    assert await titles(gql, "rates", **{"from": week_ago}) == ["Rates of flood insurance climb"]
    grouped = (await gql.run("Search", query="flood", groupByStory=True, first=10))["search"]["edges"]
    assert sorted(e["node"]["matchesInStory"] for e in grouped) == [1, 4]  # one card per story
    newest = (await gql.run("Search", query="rates", sort="DATE", first=10))["search"]["edges"]
    published = [e["node"]["article"]["publishedAt"] for e in newest]
    assert len(published) == 3
    assert published == sorted(published, reverse=True)
    assert newest[0]["node"]["article"]["title"] == "Rates of flood insurance climb"
    seen, after = [], None
    while True:
        page = (await gql.run("Search", query="flood", first=2, after=after))["search"]
        seen += [e["node"]["article"]["id"] for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert len(seen) == len(set(seen)) == 5


async def test_dates_at_either_end_of_the_calendar_narrow_the_search_without_error(
    gql: GraphQLClient, services: Services, settings: Settings
) -> None:
    """Given articles of today, when `to` is days after year 1 began or `from` is in year 9999, then nothing is
    found; when the range is the whole calendar, everything is (no window before year 1 is reckoned)."""
    await search_newsroom(services, settings)
    everything = await titles(gql, "rates")
    assert len(everything) == 3
    for sort in ("RELEVANCE", "DATE"):
        for to in ("0001-01-01T00:00:00Z", "0001-01-15T00:00:00Z", "0001-03-01T00:00:00+00:00"):
            assert await titles(gql, "rates", to=to, sort=sort) == [], to
        assert await titles(gql, "rates", sort=sort, **{"from": "9999-12-31T23:59:59Z"}) == []
        whole = await titles(gql, "rates", sort=sort, to="9999-12-31T23:59:59Z", **{"from": "0001-01-01T00:00:00Z"})
        assert sorted(whole) == sorted(everything)


async def walk(gql: GraphQLClient, query: str, *, between_pages: Any = None, **variables: Any) -> list[str]:
    """Article ids of every page of a search, two hits a page, `between_pages` awaited after the first page."""
    seen: list[str] = []
    after = None
    while True:
        page = (await gql.run("Search", query=query, first=2, after=after, **variables))["search"]
        seen += [edge["node"]["article"]["id"] for edge in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            return seen
        if after is None and between_pages is not None:
            await between_pages()
        after = page["pageInfo"]["endCursor"]


@pytest.mark.parametrize("sort", ["DATE", "RELEVANCE"])
async def test_pages_walk_the_matches_there_were_when_the_first_page_was_asked(
    gql: GraphQLClient, services: Services, settings: Settings, sort: str
) -> None:
    """Given a search's first page, when a newer and better match is stored before its next page, then the next
    pages neither repeat a hit nor skip one: they walk the matches of the first page's moment; a new search finds
    the new article."""
    outlets = await search_newsroom(services, settings)
    before = await walk(gql, "flood", sort=sort)
    assert len(before) == len(set(before)) == 5

    async def breaking_news() -> None:
        await add_story(services, StorySpec("Flood flood flood: the dam breaks", outlets[:1], age=timedelta(0)))

    during = await walk(gql, "flood", sort=sort, between_pages=breaking_news)
    assert during == before
    after = await walk(gql, "flood", sort=sort)
    assert len(after) == len(set(after)) == 6
    assert set(before) < set(after)


@pytest.mark.parametrize("sort", ["DATE", "RELEVANCE"])
async def test_an_article_committing_late_under_the_newest_id_moves_no_hit_between_pages(
    gql: GraphQLClient, services: Services, settings: Settings, sort: str
) -> None:
    """Given an article whose id was taken (in a transaction still open) before the first page's newest article,
    when it commits, the best and newest match, after the first page, then the next pages neither repeat a hit nor
    skip one that was there at the first page: it is not at an offset that the late article shifts."""
    outlets = await search_newsroom(services, settings)
    async with services.db() as late:
        reserved = int(await late.scalar(text("SELECT nextval(pg_get_serial_sequence('articles', 'id'))")))
        _, [committed] = await add_story(services, StorySpec("Flood barriers hold in Seville", outlets[:1]))
        assert committed > reserved
        there = await walk(gql, "flood", sort=sort)
        assert len(there) == len(set(there)) == 6

        async def late_commit() -> None:
            now = datetime.now(UTC)
            late.add(Article(id=reserved, source_id=outlets[0], external_id="late", url="https://late.example/1",
                             title="Flood flood flood: the dam breaks", summary="", author=None, published_at=now,
                             crawled_at=now, content_hash=reserved, language="en", topics=["world"]))  # fmt: skip
            await late.commit()

        seen = await walk(gql, "flood", sort=sort, between_pages=late_commit)
    assert len(seen) == len(set(seen))
    assert set(there) <= set(seen)


async def test_cursors_of_other_searches_and_forged_ones_get_typed_errors(gql: GraphQLClient, services: Services,
                                                                          settings: Settings) -> None:  # fmt: skip
    await search_newsroom(services, settings)
    after = (await gql.run("Search", query="flood", first=2))["search"]["pageInfo"]["endCursor"]
    other = await gql.post(document("Search"), {"query": "rates", "after": after})
    assert other["errors"][0]["extensions"]["code"] == "BAD_CURSOR"  # a cursor of another search
    fingerprint, _, _, asked, newest, *position = decode_cursor(CURSOR, after, 8)
    for offset, corrected, code in ((2, 42, "BAD_CURSOR"), (-1, None, "BAD_CURSOR"), (True, None, "BAD_CURSOR"),
                                    (2, "x" * 201, "BAD_USER_INPUT"), (2, "---", "BAD_USER_INPUT")):  # fmt: skip
        forged = encode_cursor(CURSOR, [fingerprint, offset, corrected, asked, newest, *position])  # corrected words
        answer = await gql.post(document("Search"), {"query": "flood", "after": forged})
        assert answer["errors"][0]["extensions"]["code"] == code, (offset, corrected)
    for moment, last in (("yesterday", newest), ("2026-01-01T00:00:00", newest), ("0001-01-01T00:00:00+05:00", newest),
                         ("0001-01-01T00:00:00Z", newest), ("9999-12-31T23:59:59.999999Z", newest),
                         ("1999-12-31T23:59:59Z", newest), (asked, None), (asked, "1"), (asked, True)):  # fmt: skip
        forged = encode_cursor(CURSOR, [fingerprint, 2, None, moment, last, *position])  # when asked, newest article
        answer = await gql.post(document("Search"), {"query": "flood", "after": forged})
        assert answer["errors"][0]["extensions"]["code"] == "BAD_CURSOR", (moment, last)
    tier, score, article = position
    for forged_position in ([3, score, article], [True, score, article], [tier, "0.5", article], [tier, score, "1"],
                            [tier, score, True], [2, score, article], [None, score, article],
                            [tier, None, None]):  # fmt: skip
        forged = encode_cursor(CURSOR, [fingerprint, 2, None, asked, newest, *forged_position])
        answer = await gql.post(document("Search"), {"query": "flood", "after": forged})
        assert answer["errors"][0]["extensions"]["code"] == "BAD_CURSOR", forged_position
    meili_page = encode_cursor(CURSOR, [fingerprint, 2, None, asked, newest, None, None, None])  # by offset
    assert "errors" not in await gql.post(document("Search"), {"query": "flood", "after": meili_page})
    month = (await gql.run("Search", query="flood", first=2, freshness="MONTH"))["search"]["pageInfo"]["endCursor"]
    month_key = decode_cursor(CURSOR, month, 8)
    month_print, month_position = month_key[0], month_key[5:]
    for moment in ("2000-01-01T00:00:00Z", (datetime.now(UTC) + timedelta(hours=23)).isoformat()):  # the extremes
        forged = encode_cursor(CURSOR, [month_print, 2, None, moment, newest, *month_position])
        answer = await gql.post(document("Search"), {"query": "flood", "freshness": "MONTH", "after": forged})
        assert "errors" not in answer, (moment, answer)
    once_had = ([fingerprint, 2, None], [fingerprint, 2, None, asked], [fingerprint, 2, None, asked, newest])
    for old in once_had:  # cursors of the shapes pages once had
        answer = await gql.post(document("Search"), {"query": "flood", "after": encode_cursor(CURSOR, old)})
        assert answer["errors"][0]["extensions"]["code"] == "BAD_CURSOR", old


async def test_bad_queries_get_typed_errors(gql: GraphQLClient, services: Services, settings: Settings) -> None:
    await search_newsroom(services, settings)
    for query in ("", "   ", "!!! ---", "word " * 21, "x" * 201):
        answer = await gql.post(document("Search"), {"query": query})
        assert answer["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT", query
    odd = await gql.post(document("Search"), {"query": 'flood " or or - ("'})  # unbalanced operators: no error
    assert "errors" not in odd
    async with services.db.begin() as session:  # text in other scripts does not break the search
        await session.execute(update(Article).where(Article.id == 1).values(title="東京で大雨 flood"))
    assert "東京で大雨 flood" in await titles(gql, "flood")


async def test_an_article_years_old_is_found_with_no_freshness(gql: GraphQLClient, services: Services,
                                                               settings: Settings) -> None:  # fmt: skip
    outlet = await add_source(services, settings, "archive")
    await add_story(services, StorySpec("The great flood of old", [outlet], age=timedelta(days=3650)))
    await add_story(services, StorySpec("Flood warning tonight", [outlet], age=timedelta(hours=1)))
    found = (await gql.run("Search", query="flood", first=5))["search"]["edges"]
    assert [e["node"]["article"]["title"] for e in found] == ["Flood warning tonight", "The great flood of old"]
    assert found[1]["node"]["score"] < 0.7  # its text rank only: freshness contributes nothing


async def test_a_typo_is_corrected_from_title_words_page_after_page(gql: GraphQLClient, services: Services,
                                                                    settings: Settings) -> None:  # fmt: skip
    outlet = await add_source(services, settings, "wire")
    for n in range(5):
        await add_story(services, StorySpec(f"Ukraine talks resume in Geneva, day {n}", [outlet]))
    await add_story(services, StorySpec("Umbrella sales soar in Ukrainian cities", [outlet]))
    await sync_pending(services.engine, None, settings)  # the worker's sync learns title words
    first = (await gql.run("Search", query="ukriane", first=3))["search"]
    assert (first["approximate"], first["correctedQuery"]) == (True, "ukraine")
    assert first["edges"][0]["node"]["titleHighlight"].startswith("<mark>Ukraine</mark> talks")
    # between the pages the typo becomes a title word: corrected again, the query would stand as typed (and find
    # only that story), but the cursor carries the first page's correction
    await add_story(services, StorySpec("Ukriane, a new play, opens in Kyiv", [outlet]))
    await sync_pending(services.engine, None, settings)
    after = first["pageInfo"]["endCursor"]
    second = (await gql.run("Search", query="ukriane", first=3, after=after))["search"]
    assert (second["approximate"], second["correctedQuery"]) == (True, "ukraine")
    titles_seen = [e["node"]["article"]["title"] for e in first["edges"] + second["edges"]]
    assert len(titles_seen) == len(set(titles_seen)) == 5
    assert all(t.startswith("Ukraine") for t in titles_seen)
    assert (await gql.run("Search", query="ukraine", first=3))["search"]["approximate"] is False


async def test_a_spelling_titles_use_rarely_gives_way_to_a_common_one(services: Services, settings: Settings) -> None:
    outlet = await add_source(services, settings, "wire")
    for n in range(12):
        await add_story(services, StorySpec(f"Cornwall storm damage, report {n}", [outlet]))
    await add_story(services, StorySpec("Conrwall council meets", [outlet]))  # a typo that made it into a headline
    await sync_pending(services.engine, None, settings)
    async with services.db() as session:
        assert await terms.corrected(session, "conrwall storm") == "cornwall storm"
        assert await terms.corrected(session, "cornwal") == "cornwall"
        assert await terms.corrected(session, "cornwall storm") is None  # nothing to correct
        assert await terms.corrected(session, "damgae") == "damage"  # two letters swapped (similarity 0.27)
        assert await terms.corrected(session, "qzxv") is None  # nothing close


async def test_a_correctly_spelled_word_without_matches_is_not_corrected_into_another(
        gql: GraphQLClient, services: Services, settings: Settings) -> None:  # fmt: skip
    outlet = await add_source(services, settings, "wire")
    for n in range(3):
        await add_story(services, StorySpec(f"Maine lobster season opens, week {n}", [outlet]))
    await sync_pending(services.engine, None, settings)
    # "ukraine" is absent from every title and "maine" close by trigrams (similarity 0.27, as "polcie" to "police"),
    # but three edits away: no typo of it
    found = (await gql.run("Search", query="ukraine", first=5))["search"]
    assert (found["approximate"], found["correctedQuery"], found["edges"]) == (False, None, [])
    typo = (await gql.run("Search", query="maine lobsetr", first=5))["search"]  # two letters swapped: a typo
    assert (typo["approximate"], typo["correctedQuery"], len(typo["edges"])) == (True, "maine lobster", 3)
    search = PostgresSearch(services.db, candidates=10)
    before = SearchQuery("maine lobsetr", until=datetime.now(UTC) - timedelta(days=30))  # the correction finds none
    assert await search.search(before, now=datetime.now(UTC), limit=5, offset=0) == SearchResult([], backend="postgres")


async def test_a_word_is_replaced_only_by_a_much_more_common_word_it_is_a_typo_of(services: Services) -> None:
    # a news vocabulary's counts: how many titles use each word
    vocabulary = {"police": 5000, "policy": 3000, "damage": 300, "maine": 40, "cornwall": 400, "cornwell": 3,
                  "conrwall": 1, "ukrainian": 900, "goverment": 2, "government": 6000, "storm": 700}  # fmt: skip
    async with services.db() as session:
        await session.execute(text("INSERT INTO search_terms (term, articles) VALUES (:term, :articles)"),
                              [{"term": t, "articles": n} for t, n in vocabulary.items()])  # fmt: skip
        assert await terms.corrected(session, "polcie") == "police"  # two letters swapped
        assert await terms.corrected(session, "damgae storm") == "damage storm"
        assert await terms.corrected(session, "goverment") == "government"  # in two titles: a headline's typo
        assert await terms.corrected(session, "conrwall") == "cornwall"
        assert await terms.corrected(session, "ukraine") is None  # "maine" is 3 edits away, "ukrainian" 3
        assert await terms.corrected(session, "cornwell storm") is None  # a name in a few titles, 1 edit from 400
        assert await terms.corrected(session, "plice") == "police"  # a letter missing
        assert await terms.corrected(session, "stom") is None  # under 5 letters: kept as typed (not "storm")
        assert await terms.corrected(session, "policce") == "police"  # not "policy": fewer edits first


def test_edits_count_a_swap_as_one() -> None:
    assert [terms.edits(a, b) for a, b in (("polcie", "police"), ("ukraine", "maine"), ("cornwal", "cornwall"),
                                           ("", "abc"), ("same", "same"), ("ab", "ba"), ("ca", "abc"))] == [
        1, 3, 1, 3, 0, 1, 3]  # fmt: skip


async def test_postgresql_ranks_the_newest_matches(services: Services, settings: Settings) -> None:
    search = Search(settings.model_copy(update={"search_candidates": 5}), services.db, services.redis)
    outlet = await add_source(services, settings, "wire")
    ids = [(await add_story(services, StorySpec(f"Budget vote, hour {n}", [outlet], age=timedelta(hours=n))))[1][0]
           for n in range(8)]  # fmt: skip
    found = await search.search(SearchQuery("budget"), now=datetime.now(UTC), limit=20, offset=0)
    assert sorted(hit.article_id for hit in found.hits) == sorted(ids[:5])


@pytest.mark.parametrize(("sparse_rows", "walk_rows"), [(0, 0), (0, WALK_ROWS), (10**9, WALK_ROWS)],
                         ids=["window_by_window", "walked", "older_at_once"])  # fmt: skip
async def test_postgresql_takes_the_newest_matches_across_time_windows(
    services: Services, settings: Settings, sparse_rows: int, walk_rows: int
) -> None:
    """Matches a day, a week, a month and more old: the newest `candidates` are ranked whichever windows they sit
    in, and with `until` the newest before it (the windows count back from `until`); alike whether the matches older
    than the first day are read window by window (a query the first day predicts many older matches for), by
    walking back from the first day (a few missing, and a dense first day), or at once (few)."""
    search = PostgresSearch(services.db, candidates=3, sparse_rows=sparse_rows, walk_rows=walk_rows)
    outlet = await add_source(services, settings, "wire")
    ages = [timedelta(hours=2), timedelta(hours=30), timedelta(days=3), timedelta(days=10), timedelta(days=12),
            timedelta(days=40), timedelta(days=50)]  # fmt: skip
    ids = {age: (await add_story(services, StorySpec(f"Harbour strike, day {age.days}", [outlet], age=age)))[1][0]
           for age in ages}  # fmt: skip
    now = datetime.now(UTC)

    async def found(**wanted: Any) -> set[int]:
        result = await search.search(SearchQuery("harbour strike", **wanted), now=now, limit=20, offset=0)
        return {hit.article_id for hit in result.hits}

    assert await found() == {ids[age] for age in ages[:3]}
    assert await found(until=now - timedelta(days=5)) == {ids[age] for age in ages[3:6]}
    assert await found(until=now - timedelta(days=11)) == {ids[age] for age in ages[4:]}
    assert await found(since=now - timedelta(days=11), until=now - timedelta(days=1)) == {ids[age] for age in ages[1:4]}


async def test_postgresql_walk_that_falls_short_gives_way_to_the_windows(services: Services,
                                                                        settings: Settings) -> None:  # fmt: skip
    """Three matches in the first day, one missing: the day's density predicts it in the next article, but the two
    walked are other news, so the windows find it (three days old) and the walk's rows are not used twice."""
    search = PostgresSearch(services.db, candidates=4, sparse_rows=0, walk_rows=2)
    outlet = await add_source(services, settings, "wire")
    matches = [(await add_story(services, StorySpec(f"Harbour strike, {age}", [outlet], age=age)))[1][0]
               for age in (timedelta(hours=1), timedelta(hours=2), timedelta(hours=3), timedelta(days=3))]  # fmt: skip
    for hours in (25, 26, 27):
        await add_story(services, StorySpec(f"Weather outlook, hour {hours}", [outlet], age=timedelta(hours=hours)))
    found = await search.search(SearchQuery("harbour strike"), now=datetime.now(UTC), limit=20, offset=0)
    assert sorted(hit.article_id for hit in found.hits) == sorted(matches)


async def test_postgresql_weighs_the_first_day_against_the_older_articles(services: Services,
                                                                        settings: Settings) -> None:  # fmt: skip
    """How many articles are older than a day for each of the last day's: what a query's first day of matches is
    multiplied by to predict its older ones (read from the table's statistics and counted once a while)."""
    outlet = await add_source(services, settings, "wire")
    for age in (timedelta(hours=3), timedelta(hours=20), timedelta(days=2), timedelta(days=9), timedelta(days=30),
                timedelta(days=31), timedelta(days=200), timedelta(days=400)):  # fmt: skip
        await add_story(services, StorySpec(f"Grain prices, {age}", [outlet], age=age))
    async with services.engine.connect() as connection:
        await connection.execution_options(isolation_level="AUTOCOMMIT")
        await connection.execute(text("ANALYZE articles"))
    windows = Windows(candidates=1000)
    async with services.db() as session:
        assert await windows.last_day(session, datetime.now(UTC)) == LastDay(2, 3.0)  # 6 older, 2 in the last day
        await session.execute(text("TRUNCATE articles CASCADE"))
        assert await windows.last_day(session, datetime.now(UTC)) == LastDay(2, 3.0)  # not counted again so soon


async def test_every_topic_filters_on_postgresql(services: Services, settings: Settings) -> None:
    """The search vector spells out the topics it knows (migration 0011, immutable SQL): a topic added to the
    classifier without a migration would filter out everything."""
    outlet = await add_source(services, settings, "wire")
    for topic in TOPICS:
        await add_story(services, StorySpec(f"Quarterly ledger review {topic}", [outlet], topics=[topic]))
    for topic in TOPICS:
        found = await services.search.search(SearchQuery("ledger", topics=(topic,)), now=datetime.now(UTC), limit=20,
                                             offset=0)  # fmt: skip
        assert len(found.hits) == 1, topic
