"""Migration 0020: article URLs stored under the hand-written normalization are normalized again; articles that become
one URL are merged into the oldest with their engagement, story and entities, and a second run changes nothing."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.articles.renormalize import REFERENCES, Renormalized, renormalize_article_urls
from app.db.migrate import upgrade
from app.stories.updates import STORY_UPDATED_TOPIC

# (name, URL as the hand-written normalization stored it, hours ago it was stored, clicks, shares, story)
STORED = [
    ("dots old", "https://news.example/world/../politics/vote", 9, 3, 1, 1),
    ("dots new", "https://news.example/politics/vote", 5, 4, 2, 2),
    ("idn punycode", "https://xn--bcher-kva.de/neu", 8, 1, 0, None),
    ("idn unicode", "https://bücher.de/neu", 7, 2, 5, 2),
    ("order a", "https://news.example/a.cfm?page=2&id=7", 6, 0, 0, None),
    ("order b", "https://news.example/a.cfm?id=7&page=2", 4, 5, 0, 3),
    ("order c", "https://news.example/a.cfm?id=7&ito=1490&page=2", 3, 6, 1, 3),
    ("escaped", "https://news.example/b.cfm?objectid=1&amp%3Bref=rss", 2, 0, 0, None),
    ("tilde", "https://news.example/%7eeditor/column", 2, 0, 0, None),
    ("already", "https://news.example/kept", 1, 7, 0, 1),
]
SOURCE = text("""INSERT INTO sources (feed_url, name, kind, min_interval_s, max_interval_s, status)
                 VALUES (:url, 'Feed', 'rss', 300, 3600, 'active') RETURNING id""")
# (feed URL as stored, as it is after 0020): the second and third become one, merged into the second
FEEDS = [
    ("http://127.0.0.1:9/feed", "http://127.0.0.1:9/feed"),
    ("https://news.example/rss?b=1&a=2", "https://news.example/rss?a=2&b=1"),
    ("https://news.example/./rss?a=2&b=1", "https://news.example/rss?a=2&b=1"),
]
STORY = text("""INSERT INTO story_clusters (id, title, centroid, centroid_norm, revision, article_count)
                VALUES (:id, 'Story', '{}', 0, nextval('story_revision_seq'), 0)""")
ARTICLE = text("""
    INSERT INTO articles (source_id, external_id, url, title, summary, published_at, crawled_at, content_hash,
                          click_count, share_count, cluster_id)
    VALUES (:source, :url, :url, :name, '', now(), now() - make_interval(hours => :hours), 1, :clicks, :shares, :story)
    RETURNING id
""")
STORY_COUNTS = text("""UPDATE story_clusters s
                       SET article_count = (SELECT count(*) FROM articles WHERE cluster_id = s.id),
                       representative_article_id = (SELECT min(id) FROM articles WHERE cluster_id = s.id)""")
READ = text(
    "INSERT INTO read_events (user_id, article_id, session_id, action) VALUES (:user, :article, :session, 'read')"
)
FETCH = text("""INSERT INTO fetch_log (source_id, duration_ms, bytes, items_seen, items_new)
                VALUES (:source, 1, 1, 2, 2) RETURNING id""")
TEXT = text("""INSERT INTO article_texts (article_id, origin, text, html, word_count, error_class)
               VALUES (:article, 'page', :text, '', 2, :failure)""")
ENTITY = text("""INSERT INTO article_entities (article_id, key, name, kind, mentions, seen_at)
                 VALUES (:article, :key, 'x', 'PER', 1, now())""")


async def stored_newsroom(engine: AsyncEngine) -> dict[str, int]:
    """Given articles stored under 0019 with the URLs of the old rules, read, named, with texts and in stories."""
    async with engine.begin() as connection:
        source, *_ = [await connection.scalar(SOURCE, {"url": stored}) for stored, _ in FEEDS]
        for story in (1, 2, 3):
            await connection.execute(STORY, {"id": story})
        ids = {}
        for name, url, hours, clicks, shares, story in STORED:
            values = {"url": url, "name": name, "hours": hours, "clicks": clicks, "shares": shares, "story": story}
            ids[name] = await connection.scalar(ARTICLE, {"source": source, **values})
        await connection.execute(STORY_COUNTS)
        user = await connection.scalar(
            text("INSERT INTO users (email, password_hash) VALUES ('r@x.org', 'x') RETURNING id")
        )
        for article, session in [("dots old", "s1"), ("dots new", "s1"), ("dots new", "s2"), ("order c", "s3")]:
            await connection.execute(READ, {"user": user, "article": ids[article], "session": session})
        for article, key in [
            ("dots old", "per:a"),
            ("dots new", "per:a"),
            ("dots new", "per:b"),
            ("idn unicode", "per:c"),
        ]:
            await connection.execute(ENTITY, {"article": ids[article], "key": key})
        for article, failure in [("dots new", None), ("idn punycode", "robots_disallowed"), ("idn unicode", None)]:
            await connection.execute(TEXT, {"article": ids[article], "text": article, "failure": failure})
        fetch = await connection.scalar(FETCH, {"source": source})
        for article in ("dots old", "dots new"):  # one fetch stored both spellings
            await connection.execute(text("INSERT INTO fetch_articles VALUES (:fetch, :article, 'new')"),
                                     {"fetch": fetch, "article": ids[article]})  # fmt: skip
        await connection.execute(text("UPDATE articles SET duplicate_of_id = :copy WHERE id = :near"),
                                 {"copy": ids["order b"], "near": ids["already"]})  # fmt: skip
    return ids


async def rows(engine: AsyncEngine, query: str, **params: Any) -> list[Any]:
    async with engine.connect() as connection:
        return list(await connection.execute(text(query), params))


async def test_merges_keep_the_oldest_with_everything_the_copies_had(scratch_engine: AsyncEngine) -> None:
    await upgrade(scratch_engine, "0019")
    ids = await stored_newsroom(scratch_engine)

    await upgrade(scratch_engine)  # 0020

    articles = {r.title: r for r in await rows(scratch_engine, "SELECT * FROM articles")}
    assert set(articles) == {"dots old", "idn punycode", "order a", "escaped", "tilde", "already"}
    assert {name: (a.url, a.click_count, a.share_count, a.cluster_id) for name, a in articles.items()} == {
        "dots old": ("https://news.example/politics/vote", 7, 3, 1),
        "idn punycode": ("https://xn--bcher-kva.de/neu", 3, 5, 2),  # joins the story of its copy
        "order a": ("https://news.example/a.cfm?id=7&page=2", 11, 1, 3),
        "escaped": ("https://news.example/b.cfm?objectid=1&ref=rss", 0, 0, None),
        "tilde": ("https://news.example/~editor/column", 0, 0, None),
        "already": ("https://news.example/kept", 7, 0, 1),
    }
    assert articles["dots old"].external_id == articles["dots old"].url  # known by its URL, still so
    assert articles["already"].duplicate_of_id == ids["order a"]
    reads = await rows(scratch_engine, "SELECT article_id, session_id FROM read_events ORDER BY session_id")
    assert [(r.article_id, r.session_id) for r in reads] == [
        (ids["dots old"], "s1"), (ids["dots old"], "s2"), (ids["order a"], "s3")]  # fmt: skip
    entities = await rows(scratch_engine, "SELECT article_id, key FROM article_entities ORDER BY key")
    assert [(e.article_id, e.key) for e in entities] == [
        (ids["dots old"], "per:a"), (ids["dots old"], "per:b"), (ids["idn punycode"], "per:c")]  # fmt: skip
    texts = await rows(scratch_engine, "SELECT article_id, text, error_class FROM article_texts ORDER BY text")
    assert [(t.article_id, t.text, t.error_class) for t in texts] == [
        (ids["dots old"], "dots new", None),  # the copy's text, the kept article having none
        (ids["idn punycode"], "idn unicode", None),  # the copy's text replaces the kept article's failed fetch
    ]
    produced = await rows(scratch_engine, "SELECT article_id, change FROM fetch_articles")
    assert [(p.article_id, p.change) for p in produced] == [(ids["dots old"], "new")]  # the fetch produced it, once
    stories = {s.id: s for s in await rows(scratch_engine, "SELECT * FROM story_clusters")}
    assert {k: (s.article_count, s.representative_article_id) for k, s in stories.items()} == {
        1: (2, ids["dots old"]), 2: (1, ids["idn punycode"]), 3: (1, ids["order a"])}  # fmt: skip
    updates = await rows(scratch_engine, "SELECT payload FROM outbox WHERE topic = :topic", topic=STORY_UPDATED_TOPIC)
    assert {u.payload["story_id"] for u in updates} == {2, 3}  # subscribers hear of the stories that changed
    feeds = await rows(scratch_engine, "SELECT feed_url FROM sources ORDER BY id")
    assert [f.feed_url for f in feeds] == [after for _, after in FEEDS[:2]]


async def test_a_second_run_changes_nothing(scratch_engine: AsyncEngine) -> None:
    await upgrade(scratch_engine, "0019")
    await stored_newsroom(scratch_engine)
    await upgrade(scratch_engine)
    before = await rows(scratch_engine, "SELECT * FROM articles ORDER BY id")
    async with scratch_engine.begin() as connection:
        again = await renormalize_article_urls(connection)
    assert again == Renormalized(rewritten=0, merged=0, stories=0, sources=0, sources_merged=())
    assert await rows(scratch_engine, "SELECT * FROM articles ORDER BY id") == before


async def test_every_reference_to_an_article_is_carried_by_a_merge(scratch_engine: AsyncEngine) -> None:
    await upgrade(scratch_engine)
    found = await rows(scratch_engine, """
        SELECT c.conrelid::regclass::text || '.' || a.attname AS reference
        FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY(c.conkey)
        WHERE c.contype = 'f' AND c.confrelid = 'articles'::regclass""")  # fmt: skip
    assert sorted(r.reference for r in found) == sorted(REFERENCES)
