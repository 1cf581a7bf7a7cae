"""Filter arguments shared by queries, subscriptions and mutations: language codes and topics, checked once (a region
is app/places/countries.py's to check)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from app.api.errors import bad_argument
from app.text.language_codes import checked_languages
from app.topics.keywords import TOPICS, Topic


def language_codes(languages: list[str] | None) -> list[str]:
    """Language filter values: lowercase ISO 639 codes, a bounded number of them; BAD_USER_INPUT otherwise."""
    try:
        return checked_languages(languages)
    except ValueError as error:
        raise bad_argument(f"languages: {error}") from None


def topic_values(topics: Iterable[Any] | None) -> list[str]:
    """A `[Topic!]` argument as the names stored on articles and stories."""
    return [Topic(t).value for t in topics or ()]


def topics_of(stored: Iterable[str]) -> list[Topic]:
    """Stored topic names as the GraphQL enum (a name this version does not know is left out)."""
    return [Topic(t) for t in stored if t in TOPICS]
