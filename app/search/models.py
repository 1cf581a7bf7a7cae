"""The vocabulary of titles that corrects typos in short queries (app/search/terms.py)."""

from __future__ import annotations

from sqlalchemy import Index, Integer, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base


class SearchTerm(Base):
    __tablename__ = "search_terms"
    __table_args__ = (
        Index(
            "ix_search_terms_trgm",
            "term",
            postgresql_using="gin",
            postgresql_ops={"term": "gin_trgm_ops"},
            postgresql_with={"fastupdate": "off"},
        ),
    )

    term: Mapped[str] = mapped_column(Text, primary_key=True)  # a lexeme of `newsagg_simple`: lower case, unaccented
    articles: Mapped[int] = mapped_column(Integer)  # how many articles' titles use it
