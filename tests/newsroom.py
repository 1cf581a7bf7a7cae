"""Sources, articles and stories written straight to the database, for tests of what the API serves from them."""

from __future__ import annotations

import base64
import itertools
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import update

from app.articles.models import Article
from app.services import Services
from app.settings import Settings
from app.sources.models import Source
from app.sources.service import SourceRequest, create_source
from app.stories.models import StoryCluster

_serial = itertools.count(1)


async def add_source(services: Services, settings: Settings, name: str, authority: float = 0.5,
                     language: str = "en") -> int:  # fmt: skip
    async with services.db.begin() as session:
        source = await create_source(session, settings, SourceRequest(feed_url=f"http://127.0.0.1:9/{name}",
                                                                      name=name))  # fmt: skip
        await session.execute(update(Source).where(Source.id == source.id).values(authority=authority,
                                                                                   language=language))  # fmt: skip
        return source.id


@dataclass
class StorySpec:
    title: str
    sources: list[int]  # one article from each; the first leads the card
    topics: list[str] = field(default_factory=lambda: ["world"])
    languages: list[str] = field(default_factory=lambda: ["en"])
    age: timedelta = timedelta(hours=1)  # since its latest article
    breaking: bool = False


async def add_story(services: Services, spec: StorySpec, now: datetime | None = None) -> tuple[int, list[int]]:
    """The story's id and its articles' ids (in the order of `spec.sources`)."""
    now = now or datetime.now(UTC)
    updated = now - spec.age
    async with services.db.begin() as session:
        articles = []
        for position, source_id in enumerate(spec.sources):
            n = next(_serial)
            articles.append(Article(
                source_id=source_id, external_id=f"a{n}", url=f"https://news{source_id}.example/{n}",
                title=spec.title if position == 0 else f"{spec.title} ({n})", summary="", author=None,
                published_at=updated - timedelta(minutes=position), crawled_at=updated, content_hash=n,
                language=spec.languages[0] if spec.languages else None, topics=spec.topics,
            ))  # fmt: skip
        session.add_all(articles)
        await session.flush()
        story = StoryCluster(
            title=spec.title, representative_article_id=articles[0].id, topics=spec.topics,
            topic_counts={t: len(articles) for t in spec.topics}, languages=spec.languages,
            source_ids=sorted(set(spec.sources)), article_count=len(articles), source_count=len(set(spec.sources)),
            is_breaking=spec.breaking, breaking_started_at=updated if spec.breaking else None,
            first_seen_at=updated - timedelta(minutes=len(articles)), last_updated_at=updated,
        )  # fmt: skip
        session.add(story)
        await session.flush()
        for article in articles:
            article.cluster_id = story.id
        return story.id, [a.id for a in articles]


def global_id(type_name: str, row_id: int) -> str:
    """The id a client sees for a row (strawberry's relay encoding)."""
    return base64.b64encode(f"{type_name}:{row_id}".encode()).decode()
