"""Every query on articles."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select, text, true, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.articles.models import Article
from app.db.engine import Executor
from app.extraction.models import ArticleText
from app.sources.models import Source


@dataclass(frozen=True, slots=True)
class NewArticle:
    source_id: int
    external_id: str
    url: str | None
    title: str
    summary: str
    author: str | None
    published_at: datetime
    content_hash: int


@dataclass(frozen=True, slots=True)
class InsertedArticle:
    id: int
    published_at: datetime
    external_id: str = ""


# One statement whatever the batch size: arrays unnested into rows, so it is prepared once and reused.
_INSERT_NEW = text("""
    INSERT INTO articles (source_id, external_id, url, title, summary, author, published_at, content_hash)
    SELECT * FROM unnest(
        CAST(:source_id AS bigint[]), CAST(:external_id AS text[]), CAST(:url AS text[]), CAST(:title AS text[]),
        CAST(:summary AS text[]), CAST(:author AS text[]), CAST(:published_at AS timestamptz[]),
        CAST(:content_hash AS bigint[]))
    ON CONFLICT DO NOTHING
    RETURNING id, published_at, external_id
""")
_COLUMNS = ("source_id", "external_id", "url", "title", "summary", "author", "published_at", "content_hash")


async def insert_new(session: Executor, rows: Sequence[NewArticle]) -> list[InsertedArticle]:
    """One statement; rows whose URL or (source, external id) already exist are skipped. Returns the new ones."""
    if not rows:
        return []
    by_identity: dict[tuple[int, str], NewArticle] = {}
    seen_urls: set[str] = set()
    for row in rows:  # one feed may list an entry twice; Postgres refuses one statement that conflicts with itself
        if (row.url is None or row.url not in seen_urls) and (row.source_id, row.external_id) not in by_identity:
            by_identity[(row.source_id, row.external_id)] = row
            if row.url is not None:
                seen_urls.add(row.url)
    # in one order of their URLs: stores of two sources inserting the same URLs (a wire story in both feeds) then
    # wait for each other's rows in turn, never crosswise (a deadlock, one store aborted); ids follow that order
    unique = sorted(by_identity.values(), key=lambda row: (row.url is None, row.url or ""))
    columns = {name: [getattr(row, name) for row in unique] for name in _COLUMNS}
    result = await session.execute(_INSERT_NEW, columns)
    return sorted((InsertedArticle(r.id, r.published_at, r.external_id) for r in result), key=lambda a: a.id)


async def articles_with_sources(session: AsyncSession, ids: Sequence[int]) -> list[tuple[Article, Source]]:
    """Articles by id, each with its source (whoever shows an article nearly always shows its outlet)."""
    rows = await session.execute(
        select(Article, Source).join(Source, Source.id == Article.source_id).where(Article.id.in_(ids))
    )
    return [(article, source) for article, source in rows]


async def latest_articles(
    session: AsyncSession,
    *,
    limit: int,
    after: tuple[datetime, int] | None,
    source_id: int | None = None,
    languages: Sequence[str] = (),
    topics: Sequence[str] = (),
) -> list[Article]:
    """Newest first (published_at, id descending), keyset-paginated; in any of `languages`, about any of `topics`."""
    query = select(Article).order_by(Article.published_at.desc(), Article.id.desc()).limit(limit)
    if languages:
        query = query.where(Article.language.in_(languages))
    if topics:
        query = query.where(Article.topics.overlap(list(topics)))
    if after is not None:
        query = query.where(tuple_(Article.published_at, Article.id) < tuple_(*after))
    if source_id is not None:
        query = query.where(Article.source_id == source_id)
    return list(await session.scalars(query))


@dataclass(frozen=True, slots=True)
class UnderstandTarget:
    id: int
    title: str
    summary: str
    declared_language: str | None  # the source's
    text_opening: str | None = None  # of its full text, when the feed carried it (app/extraction)


TEXT_OPENING_CHARS = 1000  # what entity extraction reads of a text (app/entities/extractor.py's MAX_TEXT)


async def understand_targets(db: Executor, ids: Sequence[int], *, again: bool = False) -> list[UnderstandTarget]:
    """The given articles not yet understood (fingerprinted and labelled); with `again`, all of them."""
    rows = await db.execute(
        select(Article.id, Article.title, Article.summary, Source.language,
               func.left(ArticleText.text, TEXT_OPENING_CHARS))
        .join(Source, Source.id == Article.source_id)
        .outerjoin(ArticleText, ArticleText.article_id == Article.id)
        .where(Article.id.in_(ids), true() if again else Article.simhash.is_(None))
        .order_by(Article.id)
    )  # fmt: skip
    return [UnderstandTarget(*row) for row in rows]


@dataclass(frozen=True, slots=True)
class Understanding:
    simhash: int
    bands: list[int]
    language: str | None
    topics: list[str]


_SET_UNDERSTANDING = text("""
    UPDATE articles SET simhash = f.simhash, simhash_bands = ARRAY[f.b0, f.b1, f.b2, f.b3], language = f.language,
                        topics = string_to_array(f.topics, ',')::varchar[]
    FROM unnest(CAST(:id AS bigint[]), CAST(:simhash AS bigint[]), CAST(:b0 AS int[]), CAST(:b1 AS int[]),
                CAST(:b2 AS int[]), CAST(:b3 AS int[]), CAST(:language AS varchar[]), CAST(:topics AS text[]))
         AS f(id, simhash, b0, b1, b2, b3, language, topics)
    WHERE articles.id = f.id
""")


async def set_understanding(db: Executor, found: dict[int, Understanding]) -> None:
    ids = list(found)
    band_columns = {f"b{i}": [found[a].bands[i] for a in ids] for i in range(4)}
    await db.execute(_SET_UNDERSTANDING, {
        "id": ids, "simhash": [found[a].simhash for a in ids], **band_columns,
        "language": [found[a].language for a in ids], "topics": [",".join(found[a].topics) for a in ids],
    })  # fmt: skip


async def band_neighbours(db: Executor, band_keys: list[int], *, since: datetime) -> list[tuple[int, int]]:
    """(id, simhash) of recent fingerprinted articles sharing a band key with any of `band_keys`."""
    rows = await db.execute(
        select(Article.id, Article.simhash).where(
            Article.simhash_bands.overlap(band_keys), Article.crawled_at >= since, Article.duplicate_of_id.is_(None)
        )
    )
    return [(row.id, row.simhash) for row in rows]


async def mark_duplicates(db: Executor, copies: dict[int, int], *, clear: Sequence[int] = ()) -> None:
    """copy id -> original id; the articles in `clear` are copies of nothing any more."""
    if clear:
        await db.execute(update(Article).where(Article.id.in_(list(clear))).values(duplicate_of_id=None))
    if copies:
        await db.execute(
            text("UPDATE articles SET duplicate_of_id = d.original FROM unnest(CAST(:copy AS bigint[]), "
                 "CAST(:original AS bigint[])) AS d(copy, original) WHERE articles.id = d.copy"),
            {"copy": list(copies), "original": list(copies.values())},
        )  # fmt: skip


async def unclustered_count(db: Executor) -> int:
    """Stored articles not yet in a story (read from the partial index of exactly those)."""
    return int(await db.scalar(select(func.count()).select_from(Article).where(Article.cluster_id.is_(None))) or 0)


async def stranded(db: Executor, *, older_than: timedelta, limit: int) -> list[int]:
    """Ids of articles stored more than `older_than` ago (by the database's clock) and still in no story, oldest
    first (read from the partial index of unclustered articles)."""
    query = (select(Article.id).where(Article.cluster_id.is_(None), Article.crawled_at < func.now() - older_than)
             .order_by(Article.id).limit(limit))  # fmt: skip
    return list(await db.scalars(query))


# --- articles that prove to be one (app/articles/merging.py): the merges planned in url_merges (copy, keeper) -------
PLAN_TABLE = text("CREATE TEMP TABLE url_merges (copy bigint PRIMARY KEY, keeper bigint NOT NULL)")
DROP_PLAN = text("DROP TABLE url_merges")
_MERGE_INTO_KEEPERS = [text(statement) for statement in (
    # clicks and shares add up
    """UPDATE articles a SET click_count = a.click_count + s.clicks, share_count = a.share_count + s.shares
       FROM (SELECT m.keeper, sum(c.click_count) AS clicks, sum(c.share_count) AS shares
             FROM url_merges m JOIN articles c ON c.id = m.copy GROUP BY m.keeper) s
       WHERE a.id = s.keeper""",
    # an article kept outside any story joins the story of its oldest copy that had one
    """UPDATE articles a SET cluster_id = s.cluster_id
       FROM (SELECT DISTINCT ON (m.keeper) m.keeper, c.cluster_id FROM url_merges m JOIN articles c ON c.id = m.copy
             WHERE c.cluster_id IS NOT NULL ORDER BY m.keeper, c.crawled_at, c.id) s
       WHERE a.id = s.keeper AND a.cluster_id IS NULL""",
    # read events move; one reader's same action in one session on two copies was one event, and stays one
    """DELETE FROM read_events r USING (
           SELECT e.id, row_number() OVER (PARTITION BY e.user_id, coalesce(m.keeper, e.article_id), e.session_id,
                                           e.action ORDER BY m.keeper IS NOT NULL, e.at, e.id) AS place
           FROM read_events e LEFT JOIN url_merges m ON m.copy = e.article_id
           WHERE e.article_id IN (SELECT copy FROM url_merges UNION SELECT keeper FROM url_merges)) d
       WHERE r.id = d.id AND d.place > 1""",
    "UPDATE read_events r SET article_id = m.keeper FROM url_merges m WHERE r.article_id = m.copy",
    # entities the kept article does not name yet (the copies' own rows go with them)
    """INSERT INTO article_entities (article_id, key, name, kind, mentions, role, seen_at)
       SELECT DISTINCT ON (m.keeper, e.key) m.keeper, e.key, e.name, e.kind, e.mentions, e.role, e.seen_at
       FROM url_merges m JOIN article_entities e ON e.article_id = m.copy ORDER BY m.keeper, e.key, e.seen_at
       ON CONFLICT DO NOTHING""",
    # a kept article without a text (none, or a failed fetch) takes its oldest copy's, a text before a failure
    """INSERT INTO article_texts (article_id, origin, text, html, word_count, title, author, published_at, image,
                                 language, error_class, etag, last_modified, extracted_at)
       SELECT DISTINCT ON (m.keeper) m.keeper, t.origin, t.text, t.html, t.word_count, t.title, t.author,
              t.published_at, t.image, t.language, t.error_class, t.etag, t.last_modified, t.extracted_at
       FROM url_merges m JOIN article_texts t ON t.article_id = m.copy JOIN articles c ON c.id = m.copy
       ORDER BY m.keeper, t.error_class IS NOT NULL, c.crawled_at, c.id
       ON CONFLICT (article_id) DO UPDATE SET
           origin = excluded.origin, text = excluded.text, html = excluded.html, word_count = excluded.word_count,
           title = excluded.title, author = excluded.author, published_at = excluded.published_at,
           image = excluded.image, language = excluded.language, error_class = NULL, etag = excluded.etag,
           last_modified = excluded.last_modified, extracted_at = excluded.extracted_at
       WHERE article_texts.error_class IS NOT NULL AND excluded.error_class IS NULL""",
    # what a copy's fetches produced, the article kept produced
    """INSERT INTO fetch_articles (fetch_id, article_id, change)
       SELECT f.fetch_id, m.keeper, f.change FROM url_merges m JOIN fetch_articles f ON f.article_id = m.copy
       ON CONFLICT DO NOTHING""",
    # near-duplicates of a copy are near-duplicates of the article kept
    """UPDATE articles a SET duplicate_of_id = m.keeper FROM url_merges m
       WHERE a.duplicate_of_id = m.copy AND a.id <> m.keeper""",
    # a story represented by a copy: its repair (delete_articles) chooses again among the articles it still has
)]  # fmt: skip
# Tables a migration before theirs may merge articles without (migration 0020 runs these with no share_links or
# article_places yet)
_MERGE_WHERE_PRESENT = {
    # a reader's link to a copy goes on working, to the article kept; marked as carried by a merge, so that the
    # reader's own link to the kept article (one per reader and article) is neither refused nor replaced by it
    "share_links": text("""UPDATE share_links s SET article_id = m.keeper, from_merge = true FROM url_merges m
                           WHERE s.article_id = m.copy"""),
    # places the kept article does not name yet, as entities
    "article_places": text("""
        INSERT INTO article_places (article_id, key, name, country, region, mentions, seen_at)
        SELECT DISTINCT ON (m.keeper, p.key) m.keeper, p.key, p.name, p.country, p.region, p.mentions, p.seen_at
        FROM url_merges m JOIN article_places p ON p.article_id = m.copy ORDER BY m.keeper, p.key, p.seen_at
        ON CONFLICT DO NOTHING"""),
}
DELETE_MERGED_COPIES = text("DELETE FROM articles a USING url_merges m WHERE a.id = m.copy RETURNING a.cluster_id")


async def merge_into_keepers(db: Executor) -> None:
    """What each copy planned in url_merges holds carried to its keeper (the copies are deleted by the caller, with
    DELETE_MERGED_COPIES, for their stories to be repaired)."""
    for statement in _MERGE_INTO_KEEPERS:
        await db.execute(statement)
    for table, statement in _MERGE_WHERE_PRESENT.items():
        if await db.scalar(text("SELECT to_regclass(:table)"), {"table": table}) is not None:
            await db.execute(statement)


async def open_merge_plan(db: Executor) -> None:
    """The temporary table url_merges (copy, keeper), for the caller to plan merges in."""
    await db.execute(PLAN_TABLE)


async def close_merge_plan(db: Executor) -> None:
    await db.execute(DROP_PLAN)
