"""Search follows each article's language, ignores accents, splits CJK text, corrects typos from title words, and every
change to an article's searchable fields is written to the outbox for the search index (I-8)

- Text search configurations `newsagg_<config>`: a copy of each configuration PostgreSQL ships, with `unaccent` before
  its dictionary, so "élection" and "election" are one word and highlights still mark the accented original.
- `newsagg_ts_config(language)`: the configuration of an ISO 639-1 code (`newsagg_simple` for the rest).
- `newsagg_search_text(text)`: CJK runs (which have no spaces between words) become overlapping character bigrams, so
  a word inside a Chinese or Japanese headline is found; other text is left as it is.
- `newsagg_search_vector(language, title, summary)`: the stored search vector. Title weight A, summary B; each in the
  article's language (stemmed) and unstemmed, so a query in any language still matches its exact words.
- `search_terms`: the words of titles and how many articles use each, under a trigram index (pg_trgm): a short query
  with a typo is corrected to close, common words. Filled here from the articles present; the index sync adds the
  words of each new article (app/search/terms.py).
- A statement-level trigger on articles writes one `search` outbox event per statement that adds, deletes or changes
  the searchable fields of articles; the index sync delivers it. `outbox.retry_at` holds a failed event back.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# ISO 639-1 code -> the configuration PostgreSQL ships for it (those present on the server are used)
LANGUAGES = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "da": "danish", "nl": "dutch",
    "en": "english", "fi": "finnish", "fr": "french", "de": "german", "el": "greek", "hi": "hindi",
    "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian", "lt": "lithuanian", "ne": "nepali",
    "no": "norwegian", "nb": "norwegian", "nn": "norwegian", "pt": "portuguese", "ro": "romanian", "ru": "russian",
    "sr": "serbian", "es": "spanish", "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}  # fmt: skip

# Hiragana, Katakana, CJK ideographs (extension A, unified, compatibility) and Hangul syllables
CJK = r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]"

# the words of titles, with how many articles use each: a query word with a typo is corrected to a close, common one
TITLE_TERMS = """
    SELECT word, ndoc FROM ts_stat($$SELECT to_tsvector('newsagg_simple', newsagg_search_text(title))
                                     FROM ({articles}) AS titles$$)
    WHERE length(word) BETWEEN 3 AND 40 AND word !~ '[0-9]'
"""

SEARCHED = ("title", "summary", "language", "topics", "cluster_id", "source_id", "published_at")  # what the index holds


def changed(alias: str) -> str:
    return ", ".join(f"{alias}.{column}" for column in SEARCHED)


OLD_VECTOR = (
    "setweight(to_tsvector('simple', coalesce(title, '')), 'A') || "
    "setweight(to_tsvector('simple', coalesce(summary, '')), 'B')"
)


def _extension_schema(name: str) -> str:
    found = op.get_bind().scalar(
        sa.text(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = :name"
        ),
        {"name": name},
    )
    return str(found)


def upgrade() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS unaccent")
    op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    unaccent, schema_of_trgm = (_extension_schema(name) for name in ("unaccent", "pg_trgm"))
    # (the vocabulary below is filled by the same query the index sync runs: app/search/terms.py)
    schema = op.get_bind().scalar(sa.text("SELECT current_schema()"))  # every name below is qualified by it: a
    # generated column and an index must not depend on the search_path of whoever writes a row
    shipped = set(op.get_bind().scalars(sa.text("SELECT cfgname FROM pg_ts_config "
                                                "WHERE cfgnamespace = 'pg_catalog'::regnamespace")))  # fmt: skip
    for config in sorted({"simple", *LANGUAGES.values()} & shipped):
        dictionary = "simple" if config == "simple" else f"{config}_stem"
        op.execute(f"CREATE TEXT SEARCH CONFIGURATION {schema}.newsagg_{config} (COPY = pg_catalog.{config})")
        op.execute(f"ALTER TEXT SEARCH CONFIGURATION {schema}.newsagg_{config} "
                   f"ALTER MAPPING FOR hword, hword_part, word WITH {unaccent}.unaccent, pg_catalog.{dictionary}")  # fmt: skip
    cases = " ".join(f"WHEN '{code}' THEN '{schema}.newsagg_{config}'" for code, config in LANGUAGES.items()
                     if config in shipped)  # fmt: skip
    op.execute(f"""
        CREATE FUNCTION {schema}.newsagg_ts_config(language text) RETURNS regconfig
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        AS $$ SELECT (CASE lower(split_part(split_part(coalesce(language, ''), '-', 1), '_', 1)) {cases}
                      ELSE '{schema}.newsagg_simple' END)::regconfig $$
    """)
    op.execute(f"""
        CREATE FUNCTION {schema}.newsagg_cjk_bigrams(body text) RETURNS text
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
        AS $$
        DECLARE
            result text := '';
            previous text;
            run integer := 0;
            c text;
        BEGIN
            FOREACH c IN ARRAY regexp_split_to_array(body, '') LOOP
                IF c ~ '{CJK}' THEN
                    IF previous IS NULL THEN
                        result := result || ' ';
                    ELSE
                        result := result || previous || c || ' ';
                    END IF;
                    previous := c;
                    run := run + 1;
                ELSE
                    IF run = 1 THEN
                        result := result || previous || ' ';
                    END IF;
                    previous := NULL;
                    run := 0;
                    result := result || c;
                END IF;
            END LOOP;
            IF run = 1 THEN
                result := result || previous;
            END IF;
            RETURN result;
        END
        $$
    """)
    # plain SQL expressions from here on: PostgreSQL inlines them (a per-row function call doubled the cost of
    # every article insert); PL/pgSQL only for text that has CJK in it
    op.execute(f"""
        CREATE FUNCTION {schema}.newsagg_search_text(body text) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        AS $$ SELECT CASE WHEN body ~ '{CJK}' THEN {schema}.newsagg_cjk_bigrams(body) ELSE body END $$
    """)
    title, summary = (f"{schema}.newsagg_search_text(coalesce({field}, ''))" for field in ("title", "summary"))
    config, simple = f"{schema}.newsagg_ts_config(language)", f"'{schema}.newsagg_simple'::regconfig"
    op.execute(f"""
        CREATE FUNCTION {schema}.newsagg_search_vector(language text, title text, summary text) RETURNS tsvector
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        AS $$
            SELECT setweight(to_tsvector({simple}, {title}), 'A') || setweight(to_tsvector({simple}, {summary}), 'B')
                || CASE WHEN {config} = {simple} THEN ''::tsvector
                        ELSE setweight(to_tsvector({config}, {title}), 'A')
                             || setweight(to_tsvector({config}, {summary}), 'B') END
        $$
    """)
    op.drop_index("ix_articles_search", table_name="articles")
    op.drop_column("articles", "search_vector")
    op.execute("ALTER TABLE articles ADD COLUMN search_vector tsvector "
               f"GENERATED ALWAYS AS ({schema}.newsagg_search_vector(language, title, summary)) STORED")  # fmt: skip
    op.create_index("ix_articles_search", "articles", ["search_vector"], unique=False, postgresql_using="gin")
    # the planner's statistics keep the 10,000 most common words (not 1,000): a word outside them is estimated at
    # half the rarest one's frequency, and with 1,000 that made a name in 90 articles look like one in 8,000, so the
    # search read a week of the date index to intersect it with 90 matches
    op.execute("ALTER TABLE articles ALTER COLUMN search_vector SET STATISTICS 1000")
    op.create_table(
        "search_terms",
        sa.Column("term", sa.Text(), nullable=False),
        sa.Column("articles", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("term", name=op.f("pk_search_terms")),
    )
    op.execute(f"CREATE INDEX ix_search_terms_trgm ON search_terms USING gin (term {schema_of_trgm}.gin_trgm_ops)")
    op.execute(f"INSERT INTO search_terms (term, articles) {TITLE_TERMS.format(articles='SELECT title FROM articles')}")

    op.add_column("outbox", sa.Column("retry_at", sa.DateTime(timezone=True), nullable=True))
    op.execute(f"""
        CREATE FUNCTION {schema}.newsagg_articles_to_search() RETURNS trigger
        LANGUAGE plpgsql
        AS $$
        DECLARE
            ids bigint[];
        BEGIN
            IF TG_OP = 'INSERT' THEN
                SELECT array_agg(id ORDER BY id) INTO ids FROM new_rows;
            ELSIF TG_OP = 'DELETE' THEN
                SELECT array_agg(id ORDER BY id) INTO ids FROM old_rows;
            ELSE
                SELECT array_agg(n.id ORDER BY n.id) INTO ids
                FROM new_rows n JOIN old_rows o ON o.id = n.id
                WHERE ({changed("n")}) IS DISTINCT FROM ({changed("o")});
            END IF;
            IF ids IS NOT NULL THEN
                INSERT INTO {schema}.outbox (topic, payload)
                VALUES ('search', jsonb_build_object('articles', to_jsonb(ids), 'inserted', TG_OP = 'INSERT'));
            END IF;
            RETURN NULL;
        END
        $$
    """)
    op.execute("CREATE TRIGGER articles_search_insert AFTER INSERT ON articles REFERENCING NEW TABLE AS new_rows "
               f"FOR EACH STATEMENT EXECUTE FUNCTION {schema}.newsagg_articles_to_search()")  # fmt: skip
    op.execute("CREATE TRIGGER articles_search_update AFTER UPDATE ON articles "
               "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows "
               f"FOR EACH STATEMENT EXECUTE FUNCTION {schema}.newsagg_articles_to_search()")  # fmt: skip
    op.execute("CREATE TRIGGER articles_search_delete AFTER DELETE ON articles REFERENCING OLD TABLE AS old_rows "
               f"FOR EACH STATEMENT EXECUTE FUNCTION {schema}.newsagg_articles_to_search()")  # fmt: skip


def downgrade() -> None:
    for operation in ("insert", "update", "delete"):
        op.execute(f"DROP TRIGGER articles_search_{operation} ON articles")
    op.execute("DROP FUNCTION newsagg_articles_to_search()")
    op.drop_column("outbox", "retry_at")
    op.drop_table("search_terms")
    op.drop_index("ix_articles_search", table_name="articles")
    op.drop_column("articles", "search_vector")
    op.execute(f"ALTER TABLE articles ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ({OLD_VECTOR}) STORED")
    op.create_index("ix_articles_search", "articles", ["search_vector"], unique=False, postgresql_using="gin")
    for function in ("newsagg_search_vector(text, text, text)", "newsagg_search_text(text)", "newsagg_cjk_bigrams(text)",
                     "newsagg_ts_config(text)"):  # fmt: skip
        op.execute(f"DROP FUNCTION {function}")
    for config in op.get_bind().scalars(sa.text("SELECT cfgname FROM pg_ts_config WHERE cfgname LIKE 'newsagg\\_%'")):
        op.execute(f"DROP TEXT SEARCH CONFIGURATION {config}")
