"""An article's full text as newsagg keeps it, the full text a feed entry carries, and its reading time (no
extractor needed: the API and the crawl import this, not trafilatura)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from app.extraction.sanitize import safe_html
from app.ingest.text import html_to_text

WORDS_PER_MINUTE = 230  # an adult's silent reading rate of non-fiction (Brysbaert 2019: 238)


@dataclass(frozen=True, slots=True)
class ExtractedArticle:
    text: str
    html: str  # sanitized
    title: str | None = None
    author: str | None = None
    published_at: datetime | None = None
    image: str | None = None
    language: str | None = None

    @property
    def word_count(self) -> int:
        return len(self.text.split())


def feed_text(content: str, min_words: int) -> ExtractedArticle | None:
    """A feed entry's own full content (content:encoded) as the article's text, when it is long enough to be one
    rather than a teaser."""
    text = html_to_text(content)
    if len(text.split()) < min_words:
        return None
    return ExtractedArticle(text=text, html=safe_html(content))


def reading_minutes(word_count: int) -> int:
    """Whole minutes to read that many words, at least 1 for any text."""
    return max(1, round(word_count / WORDS_PER_MINUTE)) if word_count else 0
