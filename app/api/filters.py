"""Filter arguments shared by queries, subscriptions and mutations: language codes, topics and regions, checked
once."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from app.api.errors import BadRequest, bad_argument
from app.places.outlets import checked_country
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


def region_code(region: str | None) -> str | None:
    """A region argument: an ISO 3166-1 alpha-2 country code, upper-cased ("de" -> "DE"); INVALID_REGION otherwise."""
    if region is None:
        return None
    try:
        return checked_country(region[:16])
    except ValueError:
        raise BadRequest(
            "INVALID_REGION", f'region: {region[:16]!r} is not an ISO 3166-1 alpha-2 country code such as "DE" or "GB"'
        ) from None
