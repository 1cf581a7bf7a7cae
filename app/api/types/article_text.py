"""An article's full text."""

from __future__ import annotations

import enum
from datetime import datetime

import strawberry

from app.extraction.models import ArticleText


@strawberry.enum(name="ArticleTextOrigin", description="Where an article's full text came from.")
class ArticleTextOriginEnum(enum.Enum):
    FEED = "feed"
    PAGE = "page"


@strawberry.type(name="ArticleText", description="An article's main text, stored once, cleaned.")
class ArticleTextNode:
    plain: str = strawberry.field(description="Plain text (from a page, paragraphs on lines of their own).")
    html: str = strawberry.field(
        description="The same text as safe HTML: paragraphs, headings, lists, quotes, emphasis, links and images "
        "only; no scripts, styles, event handlers or non-http(s) links. Relative links are left relative."
    )
    word_count: int
    origin: ArticleTextOriginEnum
    title: str | None = strawberry.field(description="The headline as the page states it.")
    author: str | None = strawberry.field(description="The author as the page states it.")
    published_at: datetime | None = strawberry.field(description="The date the page states.")
    language: str | None = strawberry.field(description="Detected from the text (ISO 639-1).")

    @classmethod
    def from_model(cls, row: ArticleText) -> ArticleTextNode:
        return cls(plain=row.text, html=row.html, word_count=row.word_count, origin=ArticleTextOriginEnum(row.origin),
                   title=row.title, author=row.author, published_at=row.published_at,
                   language=row.language)  # fmt: skip
