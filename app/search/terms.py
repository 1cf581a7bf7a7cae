"""Typo correction for short queries: the words of titles, with how many articles use each, under a trigram index.

The index sync adds the words of each article as it is inserted (`learn`, in the transaction that stamps the
article's outbox event delivered, so each article counts once). A query word is replaced only by a title word it
could be a typo of: one edit away (a letter missing, added, changed, or two swapped) for a word of 5 to 8 letters, two
for a longer one, none for a shorter one (Meilisearch's own typo tolerance, so both backends agree). And only when the
word is absent from titles, or in so few (RARE) that it is likely a typo that made it into a headline and the other
is used ten times more: "ukriane" becomes "ukraine", "conrwall" "cornwall", but "ukraine", correctly spelled, is
never "corrected" into "maine" (three edits), and "cornwell", a name in a few titles, stays itself. The closest words
are found by trigram similarity (pg_trgm), the edits counted on those few. Looking words up in this vocabulary (a few
hundred thousand rows at a million articles) is what keeps the correction fast; trigrams over every title would scan
posting lists of most of the corpus.
"""

from __future__ import annotations

from sqlalchemy import text

from app.db.engine import Executor

SIMILARITY_THRESHOLD = 0.25  # pg_trgm similarity a word needs to be a candidate ("polcie" is 0.27 from "police";
# pg_trgm's default 0.3 misses a swap of two letters in a short word)
CANDIDATES = 5  # closest words considered for each query word
TYPOS = ((9, 2), (5, 1))  # edits a word of at least this many letters may have (Meilisearch's defaults)
RARE = 2  # a word in at most this many titles may be a headline's typo: a close word may replace it,
MORE_COMMON = 10  # if titles use that one this many times more often (a word no title uses: always)

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
    """The query with each word that titles use rarely or never replaced by a word it could be a typo of and they
    use far more; None when no word needed it."""
    words: dict[int, tuple[str, int]] = {}
    candidates: dict[int, list[tuple[str, int]]] = {}
    await db.execute(_THRESHOLD, {"threshold": str(SIMILARITY_THRESHOLD)})  # for this transaction (the % operator)
    for row in await db.execute(_CLOSEST, {"query": query, "candidates": CANDIDATES}):
        words[row.n] = (row.word, row.used)
        if row.term is not None:
            candidates.setdefault(row.n, []).append((row.term, row.articles))
    typed = [word for _, (word, _) in sorted(words.items())]
    result = [_replacement(word, used, candidates.get(n, [])) for n, (word, used) in sorted(words.items())]
    return " ".join(result) if result != typed else None


def _replacement(word: str, used: int, close: list[tuple[str, int]]) -> str:
    """The word, or the title word it is most likely a typo of: the fewest edits away, then the most common."""
    budget = next((edits for letters, edits in TYPOS if len(word) >= letters), 0)
    typos = [(edits(word, term), -articles, term) for term, articles in close if articles > used * MORE_COMMON]
    within = [typo for typo in typos if typo[0] <= budget]
    return min(within)[2] if within and used <= RARE else word


def edits(a: str, b: str) -> int:
    """The edits (a letter deleted, inserted or changed, or two adjacent letters swapped) that make `a` into `b`:
    the optimal string alignment distance."""
    rows = [list(range(len(b) + 1))]
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            row[j] = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows.append(row)
    return rows[-1][-1]
