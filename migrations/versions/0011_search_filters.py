"""Search filters inside the search vector, and the vocabulary's trigram index without a pending list

- Each article's search vector also holds one lexeme per topic (`~topic:health`), its language (`~language:en`) and
  its source (`~source:12`), none of which a text or a query can produce. A filtered search is then one text-search
  condition: the GIN index intersects the words with the filters, and the planner's statistics (which keep these
  common lexemes) know how many rows they leave. Checked row by row after the text match instead, a common word
  with a topic filter read twenty thousand rows to find a thousand; through the topics index, two topics cost
  67 ms at a million articles.
- `ix_search_terms_trgm` without fastupdate: the index sync is its only writer, and a typo correction must never
  scan a list of not-yet-merged words (60 ms at 43k words instead of 2 ms).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-21
"""

import importlib.util
from collections.abc import Sequence
from pathlib import Path

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TEXT_ONLY = "newsagg_search_vector(language, title, summary)"  # 0010's
# the topics as of this migration (app/topics/keywords.Topic); a new topic needs a migration that adds it here
TOPICS = ("world", "politics", "business", "technology", "science", "health", "sports", "entertainment")
WITH_FILTERS = "newsagg_search_vector(language, title, summary, topics, source_id)"


def _languages() -> dict[str, str]:
    """0010's ISO 639-1 code -> configuration map (the same languages, only written so PostgreSQL can inline it)."""
    spec = importlib.util.spec_from_file_location("search_languages_0010",
                                                  Path(__file__).with_name("0010_search_languages.py"))  # fmt: skip
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return dict(module.LANGUAGES)


def _vector_column(schema: str, expression: str) -> None:
    op.drop_index("ix_articles_search", table_name="articles")
    op.drop_column("articles", "search_vector")
    op.execute(f"ALTER TABLE articles ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ({schema}.{expression}) "
               "STORED")  # fmt: skip
    op.create_index("ix_articles_search", "articles", ["search_vector"], unique=False, postgresql_using="gin")
    op.execute("ALTER TABLE articles ALTER COLUMN search_vector SET STATISTICS 1000")


def upgrade() -> None:
    schema = op.get_bind().scalar(sa.text("SELECT current_schema()"))
    # newsagg_ts_config again with each branch a regconfig constant: 0010's cast of a text to regconfig is stable
    # (it reads the search_path), so PostgreSQL called the function three times per row instead of inlining it
    shipped = set(op.get_bind().scalars(sa.text("SELECT cfgname FROM pg_ts_config "
                                                "WHERE cfgnamespace = 'pg_catalog'::regnamespace")))  # fmt: skip
    cases = " ".join(f"WHEN '{code}' THEN CAST('{schema}.newsagg_{config}' AS regconfig)"
                     for code, config in _languages().items() if config in shipped)  # fmt: skip
    op.execute(f"""
        CREATE OR REPLACE FUNCTION {schema}.newsagg_ts_config(language text) RETURNS regconfig
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        AS $$ SELECT CASE lower(split_part(split_part(coalesce(language, ''), '-', 1), '_', 1)) {cases}
                     ELSE CAST('{schema}.newsagg_simple' AS regconfig) END $$
    """)
    # Only immutable functions in the body (no array_to_string, no text || bigint: both are stable), so that
    # PostgreSQL inlines it like the text part; a function it cannot inline is called per row and doubled the cost
    # of inserting an article. Hence the topics one by one.
    topics = ", ".join(f"CASE WHEN '{topic}' = ANY(topics) THEN '~topic:{topic}' END" for topic in TOPICS)
    op.execute(f"""
        CREATE FUNCTION {schema}.newsagg_search_vector(language text, title text, summary text, topics varchar[],
                                                       source_id bigint) RETURNS tsvector
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        AS $$
            SELECT {schema}.newsagg_search_vector(language, title, summary)
                || array_to_tsvector(array_remove(ARRAY['~language:' || coalesce(language, ''),
                                                        '~source:' || CAST(source_id AS text), {topics}], NULL))
        $$
    """)
    _vector_column(schema, WITH_FILTERS)
    op.execute("ALTER INDEX ix_search_terms_trgm SET (fastupdate = off)")
    op.execute("SELECT gin_clean_pending_list('ix_search_terms_trgm')")  # what is pending now goes into the index


def downgrade() -> None:
    schema = op.get_bind().scalar(sa.text("SELECT current_schema()"))
    op.execute("ALTER INDEX ix_search_terms_trgm RESET (fastupdate)")
    _vector_column(schema, TEXT_ONLY)
    op.execute(f"DROP FUNCTION {schema}.newsagg_search_vector(text, text, text, varchar[], bigint)")
