"""PostgreSQL search reads each article's own text: its body in the search vector, weight D

- `newsagg_body_vector(language, body)`: the body as 0010's vector holds a title or a summary (the article's
  language stemmed and unstemmed, accents folded, CJK runs as bigrams: the same configurations and
  `newsagg_search_text`), weight D, of its first BODY_CHARS characters only. The cap: a tsvector holds at most 1 MB
  (a 2 MB page raised "string is too long for tsvector"), positions stop at 16,383 anyway, every search ranks and
  highlights the vectors and texts it reads, and the body is stored twice (its vector, and inside the search
  vector). 20,000 characters is what Meilisearch indexes of a text (app/search/documents.py TEXT_CHARS), more than
  95% of real article bodies whole (the extraction benchmark's pages: median 3,500 characters, 95th percentile
  14,600, longest 20,500).
- `newsagg_cjk_bigrams` (0010) in linear time, the same output: a CJK body is a thousand times a headline.
- `articles.body_vector`: that vector, kept by triggers, so whoever writes a text (a feed, a page fetch, the URL
  re-normalization) or changes an article's language (language detection runs after a feed's text arrives) leaves
  it right: a statement trigger on article_texts, and a row trigger on articles that fires only when `language`
  changes.
- `articles.search_vector`, still generated: 0011's vector `||` the body vector. Every query, filter, phrase test
  and index of search reads it as before, and finds the body's words. Why here and not in a vector column of
  article_texts under a GIN index of its own: the search's windows, phrase tests and filters (lexemes of the
  articles' vector) all read one vector on articles; with two, every window would be a union of two index scans and
  a join, a filter could not narrow the body's matches in the index, and the body would miss the article's
  language (a column of articles). What this costs a search, bench/search_text.py measures (same articles and
  queries, with and without bodies); the other layout was not built to compare.

Locks: redefining the generated column rewrites articles (as 0010 and 0011 did) under an exclusive lock held to the
end of the migration's transaction (app/db/migrate.py runs every migration in one); the rewrite only concatenates
(every body vector is still NULL), as fast as 0011's. The texts stored before are not indexed here: about 5 ms a text
(measured by bench/search_text.py), 100,000 of them would hold that lock, reads included, for 8 minutes. The worker
indexes them after, 200 articles per transaction (app/search/bodies.py), at its start.

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
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
