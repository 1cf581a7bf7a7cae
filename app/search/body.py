"""The second tier of PostgreSQL search: articles whose own text (app/extraction) matches a query their title and
summary do not, read only when the title and summary's matches do not fill the page.

The body's words are a GIN index on article_texts (`ix_article_texts_body`, migration 0027: the expression
`newsagg_body_vector(search_language, text)`, the first TEXT_CHARS characters, the article's language stemmed and
unstemmed, CJK bigrams), the vector never stored, and not concatenated into the search vector: the title and
summary's search (app/search/postgres.py, app/search/windows.py) reads the short vectors it read before, ranks them
as before, and a common word's candidates are not multiplied by every body that says it. The index finds the
loosened query's texts (`found`, materialized so that the index, not a vector computed per article, finds them);
a phrase or an exclusion is tested on them newest first, a vector computed from the text for each, until enough
are found. Every body-only match ranks under every title or summary match, so the tiers are searched one after the
other and a page takes the title and summary's hits first, then the body's: their order is the one a single
ranking would give. Paging goes on across the tiers (a page's offset past the first tier's hits is an offset into
the second). With the date order (`newest_first`) too, the body's hits follow the title and summary's.

The body's hits are its newest matches (up to `candidates`, as the first tier's), newest first: no `ts_rank` on
long vectors, their score a constant tier (BODY_SCORE, under any title match) times freshness. Filters are tested
as in the first tier (the topic, source and language lexemes of the search vector, the dates); one hit per story
leaves out the stories the first tier showed (a story with an article whose title or summary matches). A hit's
extract comes from the body.

What it does not do: a query whose words are split between the title and the body (every word must be in one of
the two tiers' fields) is not found by that split; a phrase is looked for in the newest PHRASE_TESTS bodies that
have all its words (after filters), so an older body saying it is not found when those hundred say its words
apart.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.search.documents import TEXT_CHARS
from app.search.query import BODY_TIER, SUMMARY_WORDS, SearchHit, SearchPosition, SearchQuery, highlighted

BODY_CHARS = TEXT_CHARS  # the lead of a text the index holds (migration 0027 BODY_CHARS)
BODY_SCORE = 0.1  # a body-only hit's score, times its freshness: under a title or summary match's
PHRASE_TESTS = 100  # the most texts a phrase is tested on (each a vector computed: about 1 ms for 3,000 characters)
_PHRASE = re.compile(r"<(?:-|\d+)>")  # tsquery's FOLLOWED BY

_BODY = """
    WITH q AS (SELECT CAST(:exact AS tsquery) AS query, {configs} AS configs),
    found AS MATERIALIZED (
        SELECT t.article_id FROM article_texts t
        WHERE t.search_language IS NOT NULL AND {body} @@ CAST(:{searched} AS tsquery)
    ),
    candidates AS (
        SELECT * FROM (
            SELECT a.id, a.cluster_id, a.published_at
            FROM found f JOIN articles a ON a.id = f.article_id
            WHERE NOT ts_match_vq(a.search_vector, CAST(:exact AS tsquery)) {filter_test} {filters} {story_test}
            ORDER BY a.published_at DESC, a.id DESC
            LIMIT :tested
        ) AS m
        WHERE {exact_test}
        LIMIT :needed
    ),
    grouped AS (
        SELECT m.id, m.cluster_id, m.published_at, {body_score} * {freshness} AS score,
               row_number() OVER (PARTITION BY coalesce(m.cluster_id, -m.id) ORDER BY m.published_at DESC, m.id DESC)
                   AS place,
               count(*) OVER (PARTITION BY coalesce(m.cluster_id, -m.id)) AS matches
        FROM candidates m
    ),
    page AS (
        SELECT * FROM grouped WHERE {grouping} {after}
        ORDER BY published_at DESC, id DESC
        LIMIT :limit OFFSET :offset
    )
    SELECT page.id, page.cluster_id, page.score, page.published_at, page.matches,
           ts_headline({config}, a.title, q.query, :marks || ', HighlightAll=true') AS title_highlight,
           ts_headline({config}, left(t.text, {body_chars}), q.query,
                       :marks || ', MaxFragments=2, MaxWords={summary_words}, MinWords=10') AS body_highlight
    FROM page JOIN articles a ON a.id = page.id JOIN article_texts t ON t.article_id = a.id, q
    ORDER BY page.published_at DESC, page.id DESC
"""
AFTER = "AND ({}) < (:after_value, :after_id)"  # the hits after a SearchPosition, in its tier's order's columns
_BODY_VECTOR = "newsagg_body_vector(t.search_language, t.text)"  # the index's expression (migration 0027)
# a phrase, tested on the texts with all its words newest first (at most PHRASE_TESTS), until enough are found
_EXACT = f"""(SELECT ts_match_vq({_BODY_VECTOR}, CAST(:exact AS tsquery)) FROM article_texts t
               WHERE t.article_id = m.id)"""
# one hit per story: not a story of the first tier (one of its articles' title or summary matches, within filters)
_STORY_TEST = """AND NOT (a.cluster_id IS NOT NULL AND EXISTS (
            SELECT 1 FROM articles s
            WHERE s.cluster_id = a.cluster_id AND s.search_vector @@ CAST(:exact AS tsquery)
                  {filter_test} {filters}))"""


async def body_hits(db: AsyncSession, query: SearchQuery, *, configs: str, exact: str, loose: bool,
                    filter_query: bool, filters: str, headline_config: str, freshness: str, params: Mapping[str, Any],
                    limit: int, offset: int, after: SearchPosition | None = None) -> list[SearchHit]:  # fmt: skip
    """Up to `limit` body-only hits after `after` (a position in this tier), else after the first `offset`.
    `configs` is the query's configurations (an SQL array), `exact` the query (tsquery text), `params` binds it as
    `exact` (and its loosened form as `loose` when `loose`), `filters` (a tsquery, when `filter_query`), the date
    conditions' `filters` (on `a`), `candidates` (the most matches read, as the first tier's), `now`, `marks` and the
    languages `configs` names.

    The index answers a query without phrases exactly (exclusions too: it knows which of a text's words are the
    query's), so only a phrase needs a vector computed from each text: it is tested newest first, until the page
    is filled (one hit per story, or a page after a position: `candidates` matches), on at most PHRASE_TESTS texts
    that have all its words."""
    phrase = loose and bool(_PHRASE.search(exact))
    candidates = int(params["candidates"])
    needed = candidates if query.by_story or after else min(candidates, offset + limit)
    filter_test = "AND {0}.search_vector @@ CAST(:filters AS tsquery)" if filter_query else ""
    story_test = _STORY_TEST.format(filter_test=filter_test.format("s"), filters=filters.replace("a.", "s."))
    sql = _BODY.format(
        configs=configs, searched="loose" if phrase else "exact", filter_test=filter_test.format("a"), filters=filters,
        exact_test=_EXACT if phrase else "true", body=_BODY_VECTOR,
        story_test=story_test if query.by_story else "", body_score=BODY_SCORE, freshness=freshness,
        grouping="place = 1" if query.by_story else "true", after=AFTER.format("published_at, id") if after else "",
        config=headline_config, body_chars=BODY_CHARS, summary_words=SUMMARY_WORDS,
    )  # fmt: skip
    tested = PHRASE_TESTS if phrase else candidates
    rows = await db.execute(text(sql), {**params, **paging(limit, offset, after), "needed": needed, "tested": tested})
    return [SearchHit(r.id, r.cluster_id, float(r.score), highlighted(r.title_highlight),
                      highlighted(r.body_highlight), int(r.matches), SearchPosition(BODY_TIER, r.published_at, r.id))
            for r in rows]  # fmt: skip


def paging(limit: int, offset: int, after: SearchPosition | None) -> dict[str, Any]:
    """A page's parameters: `limit` hits after `after` (the value and id AFTER compares with), else from `offset`."""
    if after is None:
        return {"limit": limit, "offset": offset}
    return {"limit": limit, "offset": 0, "after_value": after.value, "after_id": after.article_id}
