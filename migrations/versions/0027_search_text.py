"""PostgreSQL search reads each article's own text: a GIN index of its words on article_texts, searched after titles

- `newsagg_body_vector(language, body)`: the body as 0010's vector holds a title or a summary (the article's
  language stemmed and unstemmed, accents folded, CJK runs as bigrams: the same configurations and
  `newsagg_search_text`), weight D, of its first BODY_CHARS characters only. The cap: a tsvector holds at most 1 MB
  (a 2 MB page raised "string is too long for tsvector"), positions stop at 16,383 anyway, and every search
  highlights the texts it shows. 20,000 characters is what Meilisearch indexes of a text (app/search/documents.py
  TEXT_CHARS), more than 95% of real article bodies whole (the extraction benchmark's pages: median 3,500
  characters, 95th percentile 14,600, longest 20,500).
- `ix_article_texts_body`: a GIN index on that expression, the vector never stored. The index alone is what search
  keeps of the bodies (bench/search_text.py: 83 MB for 100,000 texts of 3,300 characters on average, where a stored
  vector column took 690 MB more, 6.2 KB a text after compression). The index answers a query without phrases
  exactly (exclusions too), without computing a vector; a vector is computed from the text (about 1 ms for 3,000
  characters) only to test a phrase, on at most 100 texts with all its words, newest first until the page is
  filled (app/search/body.py). `article_texts.search_language`, the article's language the index stems the text in
  ('' for none; NULL: not indexed yet, the index is partial), kept by triggers: a text inserted (or rewritten while
  still unindexed) takes its article's, and a change of the article's language (language detection runs after a
  feed's text arrives) is copied to its text.
- `newsagg_cjk_bigrams` (0010) in linear time, the same output: a CJK body is a thousand times a headline.

Why not in the search vector (the first version of this migration: `search_vector || body_vector`): the body was
stored twice (its column and inside the generated search vector), the articles table with its indexes grew from
179 to 1,745 MB, every common word matched and ranked far more rows, and ts_rank on long vectors was slow: p50
3.3 times, p95 4.55 times title and summary only's (bench/search_text.py; this layout, run right after: 1.56 and
1.81 times, and the table unchanged with an 83 MB body index). A body-only match
ranks under every title or summary match anyway, so the body is a second tier searched only when the first does
not fill the page (app/search/body.py): the title and summary's search reads and ranks exactly what it read before
the body existed, and the body's hits, newest first, need no ts_rank. A lead shorter than 20,000 characters was
measured too and is not needed (5,000 of the bench's texts, 2,700 characters on average: the distinct words of the
body that title and summary lack, lost by indexing only the first 1,000 characters 56%, 2,000: 22%, 4,000: 2.6%,
8,000: none; the index per text 1.03 KB, 1.46 KB, and 1.75 KB for the whole text): the index grows with a text's
distinct words, not its length, so a lead saves little of it and loses words.

Locks: nothing is rewritten; the index is built empty (every search_language is NULL). The texts stored before are
indexed by the worker after, 200 a transaction (app/search/bodies.py), at its start: indexing costs a few ms a text,
which for 100,000 texts the migration would have spent holding its locks.

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Hiragana, Katakana, CJK ideographs (extension A, unified, compatibility) and Hangul syllables: 0010's CJK
CJK = r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]"
BODY_CHARS = 20_000  # app/search/documents.py TEXT_CHARS


def _functions(schema: str) -> None:
    body = f"{schema}.newsagg_search_text(left(body, {BODY_CHARS}))"
    config, simple = f"{schema}.newsagg_ts_config(language)", f"CAST('{schema}.newsagg_simple' AS regconfig)"
    op.execute(f"""
        CREATE FUNCTION {schema}.newsagg_body_vector(language text, body text) RETURNS tsvector
        LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
        AS $$
            SELECT setweight(to_tsvector({simple}, {body}), 'D')
                || CASE WHEN {config} = {simple} THEN ''::tsvector
                        ELSE setweight(to_tsvector({config}, {body}), 'D') END
        $$
    """)


def _cjk_bigrams(schema: str) -> None:
    """0010's function, its output unchanged, in linear time: appending to a text copies it, so a 20,000-character
    CJK body took 0.5 s (every character copied the result so far); an array grows in place (47 ms)."""
    op.execute(f"""
        CREATE OR REPLACE FUNCTION {schema}.newsagg_cjk_bigrams(body text) RETURNS text
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
        AS $$
        DECLARE
            parts text[] := '{{}}';
            previous text;
            run integer := 0;
            c text;
        BEGIN
            FOREACH c IN ARRAY regexp_split_to_array(body, '') LOOP
                IF c ~ '{CJK}' THEN
                    IF previous IS NULL THEN
                        parts := array_append(parts, ' ');
                    ELSE
                        parts := array_append(parts, previous || c || ' ');
                    END IF;
                    previous := c;
                    run := run + 1;
                ELSE
                    IF run = 1 THEN
                        parts := array_append(parts, previous || ' ');
                    END IF;
                    previous := NULL;
                    run := 0;
                    parts := array_append(parts, c);
                END IF;
            END LOOP;
            IF run = 1 THEN
                parts := array_append(parts, previous);
            END IF;
            RETURN array_to_string(parts, '');
        END
        $$
    """)


def _triggers(schema: str) -> None:
    # a text written takes its article's language (an updated one keeps its own); NULL is "not yet indexed"
    op.execute(f"""
        CREATE FUNCTION {schema}.newsagg_texts_language() RETURNS trigger
        LANGUAGE plpgsql
        AS $$
        BEGIN
            IF TG_OP = 'INSERT' OR NEW.search_language IS NULL THEN
                NEW.search_language := (SELECT coalesce(a.language, '') FROM {schema}.articles a
                                        WHERE a.id = NEW.article_id);
            END IF;
            RETURN NEW;
        END
        $$
    """)
    op.execute("CREATE TRIGGER article_texts_search_language BEFORE INSERT OR UPDATE OF text ON article_texts "
               "FOR EACH ROW "
               f"EXECUTE FUNCTION {schema}.newsagg_texts_language()")  # fmt: skip
    # the body is stemmed in the article's language, which language detection may set after the text arrived
    op.execute(f"""
        CREATE FUNCTION {schema}.newsagg_body_language() RETURNS trigger
        LANGUAGE plpgsql
        AS $$
        BEGIN
            UPDATE {schema}.article_texts SET search_language = coalesce(NEW.language, '')
            WHERE article_id = NEW.id AND search_language IS DISTINCT FROM coalesce(NEW.language, '');
            RETURN NULL;
        END
        $$
    """)
    op.execute("CREATE TRIGGER articles_body_language AFTER UPDATE OF language ON articles FOR EACH ROW "
               "WHEN (OLD.language IS DISTINCT FROM NEW.language) "
               f"EXECUTE FUNCTION {schema}.newsagg_body_language()")  # fmt: skip


def upgrade() -> None:
    schema = op.get_bind().scalar(sa.text("SELECT current_schema()"))
    op.add_column("article_texts", sa.Column("search_language", sa.String(16), nullable=True))
    _cjk_bigrams(schema)
    _functions(schema)
    _triggers(schema)  # from here on, every text written is indexed; those stored before: app/search/bodies.py
    # (every search_language is NULL yet: the index is built empty, at once)
    op.execute(
        f"CREATE INDEX ix_article_texts_body ON article_texts "
        f"USING gin ({schema}.newsagg_body_vector(search_language, text)) WHERE search_language IS NOT NULL"
    )


def downgrade() -> None:
    schema = op.get_bind().scalar(sa.text("SELECT current_schema()"))
    op.drop_index("ix_article_texts_body", table_name="article_texts")
    op.execute("DROP TRIGGER articles_body_language ON articles")
    op.execute("DROP TRIGGER article_texts_search_language ON article_texts")
    op.execute(f"DROP FUNCTION {schema}.newsagg_body_language()")
    op.execute(f"DROP FUNCTION {schema}.newsagg_texts_language()")
    op.execute(f"DROP FUNCTION {schema}.newsagg_body_vector(text, text)")
    op.drop_column("article_texts", "search_language")
