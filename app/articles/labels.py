"""What an article is about and in which language: computed once, when it is understood (jobs: understand)."""

from __future__ import annotations

from dataclasses import dataclass

from app.articles.language import article_language
from app.topics.classifier import topics_of


@dataclass(frozen=True, slots=True)
class Labels:
    language: str | None
    topics: list[str]


def label(texts: list[tuple[str, str, str | None]]) -> list[Labels]:
    """(title, summary, the source's declared language) -> labels, in order: topics only for an article in a language
    the topic classifier reads (app/topics/classifier.py), none otherwise. CPU-bound: run it in a thread."""
    languages = [article_language(title, summary, declared) for title, summary, declared in texts]
    topics = topics_of([(title, summary) for title, summary, _ in texts], languages)
    return [Labels(language, found) for language, found in zip(languages, topics, strict=True)]
