"""Two sources that are one feed made one: `newsagg sources merge SURVIVOR OTHER`, and migration 0022 for sources whose
feed URLs became one under the new normalization (0020 had left such pairs)."""

from __future__ import annotations

import os
from datetime import UTC, datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.archive.replay import replay
from app.db.migrate import upgrade
from app.services import Services
from app.settings import Settings
from app.sources.merge import REFERENCES
from tests.archives import archive_bodies
from tests.conftest import newsagg
from tests.feeds import items, rss
from tests.test_renormalize import rows

SOURCE = text("""INSERT INTO sources (feed_url, name, kind, min_interval_s, max_interval_s, status)
                 VALUES (:url, 'Wire', 'rss', 300, 3600, 'active') RETURNING id""")
SCHEDULE = text(
    "INSERT INTO crawl_schedule (source_id, next_crawl_at) VALUES (:source, now() + make_interval(mins => :m))"
)
ARTICLE = text("""
    INSERT INTO articles (source_id, external_id, url, title, summary, published_at, content_hash, click_count,
                          cluster_id)
    VALUES (:source, :ext, :url, :ext, '', now(), 1, :clicks, :story) RETURNING id
""")
STORY = text("""
    INSERT INTO story_clusters (id, title, centroid, centroid_norm, revision, article_count, source_count, source_ids,
                                recent_arrivals)
    VALUES (1, 'Story', '{}', 0, nextval('story_revision_seq'), 2, 2, CAST(:sources AS bigint[]),
            CAST(:arrivals AS jsonb))
""")
SHARE = text("INSERT INTO share_links (code, creator_id, target_kind, article_id) VALUES (:code, :u, 'article', :a)")
USER = text("INSERT INTO users (email, password_hash) VALUES (:email, 'x') RETURNING id")


async def _newsroom(services: Services) -> dict[str, int]:
    """Given source `a` and, added later, source `b` of the same feed: both hold entry e1, each one more, one story
    holds an article of each; readers follow and mute them; b was fetched and archived three times."""
    async with services.engine.begin() as connection:
        ids = {name: await connection.scalar(SOURCE, {"url": f"https://wire.example/{name}"}) for name in "ab"}
        for name, minutes in (("a", 30), ("b", 5)):
            await connection.execute(SCHEDULE, {"source": ids[name], "m": minutes})
        arrivals = f'[[1.0, "{ids["a"]}"], [2.0, "{ids["b"]}"]]'
        await connection.execute(STORY, {"sources": [ids["a"], ids["b"]], "arrivals": arrivals})
        for key, source, ext, clicks, story in (("a1", "a", "e1", 1, None), ("a2", "a", "e2", 0, 1),
                                                ("b1", "b", "e1", 4, None), ("b3", "b", "e3", 0, 1)):  # fmt: skip
            url = f"https://wire.example/{key}"
            values = {"source": ids[source], "ext": ext, "url": url, "clicks": clicks, "story": story}
            ids[key] = await connection.scalar(ARTICLE, values)
        ids["u1"], ids["u2"] = [await connection.scalar(USER, {"email": f"{u}@x.org"}) for u in ("u1", "u2")]
        for user, source in (("u1", "b"), ("u2", "a"), ("u2", "b")):
            await connection.execute(text("INSERT INTO source_follows (user_id, source_id) VALUES (:u, :s)"),
                                     {"u": ids[user], "s": ids[source]})  # fmt: skip
        await connection.execute(text("INSERT INTO source_mutes (user_id, source_id) VALUES (:u, :s)"),
                                 {"u": ids["u1"], "s": ids["b"]})  # fmt: skip
        await connection.execute(text("INSERT INTO read_events (user_id, article_id, session_id, action) "
                                      "VALUES (:u, :a, 's', 'read')"), {"u": ids["u1"], "a": ids["b1"]})  # fmt: skip
        for code, user, article in (("u1-kept", "u1", "a1"), ("u1-copy", "u1", "b1"), ("u2-copy", "u2", "b1")):
            await connection.execute(SHARE, {"code": code, "u": ids[user], "a": ids[article]})
    await archive_bodies(services, ids["b"], [rss(items(2, start=k)) for k in range(3)])
    return ids


async def test_merging_moves_everything_of_the_other_source_to_the_survivor(
    services: Services, settings: Settings
) -> None:
    ids = await _newsroom(services)
    env = {**os.environ, "DATABASE_URL": str(settings.database_url)}

    merged = newsagg("sources", "merge", str(ids["a"]), str(ids["b"]), env=env)

    assert merged.returncode == 0, merged.stderr
    assert "1 articles moved, 1 held by both merged" in merged.stdout  # b3 moved; b1 merged into a1
    engine = services.engine
    assert [r.id for r in await rows(engine, "SELECT id FROM sources")] == [ids["a"]]
    articles = {r.id: r for r in await rows(engine, "SELECT * FROM articles")}
    assert set(articles) == {ids["a1"], ids["a2"], ids["b3"]}  # b1 was a1: merged into it
    assert {a.source_id for a in articles.values()} == {ids["a"]}
    assert articles[ids["a1"]].click_count == 5
    reads = await rows(engine, "SELECT article_id FROM read_events")
    assert [r.article_id for r in reads] == [ids["a1"]]
    links = await rows(engine, "SELECT code, article_id, from_merge FROM share_links ORDER BY code")
    assert [(s.code, s.article_id, s.from_merge) for s in links] == [  # every shared link still leads on
        ("u1-copy", ids["a1"], True),
        ("u1-kept", ids["a1"], False),
        ("u2-copy", ids["a1"], True),
    ]
    follows = await rows(engine, "SELECT user_id, source_id FROM source_follows ORDER BY user_id")
    assert [(f.user_id, f.source_id) for f in follows] == [(ids["u1"], ids["a"]), (ids["u2"], ids["a"])]
    mutes = await rows(engine, "SELECT user_id, source_id FROM source_mutes")
    assert [(m.user_id, m.source_id) for m in mutes] == [(ids["u1"], ids["a"])]
    story = (await rows(engine, "SELECT * FROM story_clusters"))[0]
    assert (story.article_count, story.source_count, story.source_ids) == (2, 1, [ids["a"]])
    assert [source for _, source in story.recent_arrivals] == [str(ids["a"])] * 2
    schedule = await rows(engine, "SELECT source_id, next_crawl_at < now() + interval '10 minutes' AS soon "
                                  "FROM crawl_schedule")  # fmt: skip
    assert [(s.source_id, s.soon) for s in schedule] == [(ids["a"], True)]  # as soon as b was due
    logged = await rows(engine, "SELECT DISTINCT source_id FROM fetch_log UNION SELECT source_id FROM fetch_archive")
    assert [r.source_id for r in logged] == [ids["a"]]
    replayed = await replay(engine, settings, ids["a"], since=datetime(2000, 1, 1, tzinfo=UTC))
    assert (replayed.fetches, replayed.items, replayed.damaged) == (3, 4, 0)  # b's archive, read as a's


async def test_a_merge_of_a_source_into_itself_or_an_unknown_one_is_refused(
    services: Services, settings: Settings
) -> None:
    ids = await _newsroom(services)
    env = {**os.environ, "DATABASE_URL": str(settings.database_url)}

    itself = newsagg("sources", "merge", str(ids["a"]), str(ids["a"]), env=env)
    unknown = newsagg("sources", "merge", str(ids["a"]), "999", env=env)

    assert (itself.returncode, unknown.returncode) == (1, 1)
    assert "into itself" in itself.stderr
    assert "no source 999" in unknown.stderr
    assert len(await rows(services.engine, "SELECT id FROM sources")) == 2


async def test_migration_0022_merges_sources_whose_feed_urls_became_one(scratch_engine: AsyncEngine) -> None:
    await upgrade(scratch_engine, "0020")
    async with scratch_engine.begin() as connection:  # as 0020 left them: one URL in normal form, one not
        older = await connection.scalar(SOURCE, {"url": "https://news.example/./rss?a=2&b=1"})
        newer = await connection.scalar(SOURCE, {"url": "https://news.example/rss?a=2&b=1"})
        for source, ext in ((older, "x1"), (newer, "x2")):
            await connection.execute(ARTICLE, {"source": source, "ext": ext, "url": f"https://news.example/{ext}",
                                               "clicks": 0, "story": None})  # fmt: skip

    await upgrade(scratch_engine)

    sources = await rows(scratch_engine, "SELECT id, feed_url FROM sources")
    assert [(s.id, s.feed_url) for s in sources] == [(older, "https://news.example/rss?a=2&b=1")]
    held = await rows(scratch_engine, "SELECT DISTINCT source_id FROM articles")
    assert [r.source_id for r in held] == [older]


async def test_every_reference_to_a_source_is_carried_by_a_merge(scratch_engine: AsyncEngine) -> None:
    await upgrade(scratch_engine)
    found = await rows(scratch_engine, """
        SELECT c.conrelid::regclass::text || '.' || a.attname AS reference
        FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY(c.conkey)
        WHERE c.contype = 'f' AND c.confrelid = 'sources'::regclass""")  # fmt: skip
    assert sorted(r.reference for r in found) == sorted(REFERENCES)
