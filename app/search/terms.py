"""Typo correction for short queries: the words of titles, with how many articles use each, under a trigram index.

The index sync adds the words of each article as it is inserted (`learn`, in the transaction that stamps the
article's outbox event delivered, so each article counts once). A query word that no title uses is replaced by the
most common title word among the closest ones by trigram similarity (pg_trgm), and so is a word titles use, but ten
times less than a close one (a typo that made it into a headline): "ukriane" becomes "ukraine",
"conrwall" "cornwall". Looking words up in this vocabulary (a few hundred thousand rows at a million articles) is what
keeps the correction fast; trigrams over every title would scan posting lists of most of the corpus.
"""

from __future__ import annotations

from sqlalchemy import text

from app.db.engine import Executor

SIMILARITY_THRESHOLD = 0.25  # pg_trgm similarity a word needs to be a candidate ("polcie" is 0.27 from "police";
# pg_trgm's default 0.3 misses a swap of two letters in a short word)
CANDIDATES = 5  # closest words considered for each query word
SIMILARITY_SLACK = 0.1  # of those within this much of the closest, the most common wins
MORE_COMMON = 10  # and replaces the word if titles use it this many times more often (a word no title uses: always)

_LEARN = text("""
    INSERT INTO search_terms (term, articles)
    SELECT word, ndoc FROM ts_stat(format(
        'SELECT to_tsvector(''newsagg_simple'', newsagg_search_text(title)) FROM articles WHERE id = ANY(%L)',
        CAST(:ids AS bigint[])))
    WHERE length(word) BETWEEN 3 AND 40 AND word !~ '[0-9]'
    ORDER BY word
    ON CONFLICT (term) DO UPDATE SET articles = search_terms.articles + excluded.articles
""")

_THRESHOLD = text("SELECT set_config('pg_trgm.similarity_threshold', :threshold, true)")

_CLOSEST = text("""
    SELECT w.word, w.n, coalesce((SELECT s.articles FROM search_terms s WHERE s.term = w.word), 0) AS used,
           c.term, c.articles, c.closeness
    FROM (SELECT lexeme AS word, min(p) AS n
          FROM unnest(to_tsvector('newsagg_simple', :query)) AS t(lexeme, positions, weights),
               unnest(positions) AS p
          GROUP BY lexeme) AS w
    LEFT JOIN LATERAL (
        SELECT term, articles, similarity(term, w.word) AS closeness FROM search_terms
        WHERE term % w.word AND term <> w.word
        ORDER BY closeness DESC, articles DESC LIMIT :candidates
    ) AS c ON length(w.word) >= 3
    ORDER BY w.n, c.closeness DESC
""")


async def learn(db: Executor, article_ids: list[int]) -> None:
    """Counts the title words of these (newly inserted) articles."""
    if article_ids:
        await db.execute(_LEARN, {"ids": article_ids})


async def corrected(db: Executor, query: str) -> str | None:
    """The query with each word that titles use rarely or never replaced by a close word they use far more; None when
    no word needed it."""
    words: dict[int, tuple[str, int]] = {}
    candidates: dict[int, list[tuple[str, int, float]]] = {}
    await db.execute(_THRESHOLD, {"threshold": str(SIMILARITY_THRESHOLD)})  # for this transaction (the % operator)
    for row in await db.execute(_CLOSEST, {"query": query, "candidates": CANDIDATES}):
        words[row.n] = (row.word, row.used)
        if row.term is not None:
            candidates.setdefault(row.n, []).append((row.term, row.articles, row.closeness))
    typed, result = [], []
    for n, (word, used) in sorted(words.items()):
        close = candidates.get(n, [])
        best = close[0][2] if close else 0.0
        term, articles, _ = max((c for c in close if c[2] >= best - SIMILARITY_SLACK), key=lambda c: c[1],
                                default=(word, used, 0.0))  # fmt: skip
        typed.append(word)
        result.append(term if articles > used * MORE_COMMON or (used == 0 and term != word) else word)
    return " ".join(result) if result != typed else None
