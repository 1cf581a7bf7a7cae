"""Test factories: sources, articles, stories and breaking events in the database; readers through the API."""

from __future__ import annotations

import base64
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import update

from app.articles.models import Article
from app.outbox.models import OutboxEvent
from app.services import Services
from app.settings import Settings
from app.sources.models import Source
from app.sources.service import SourceRequest, create_source
from app.stories.clustering import IncomingArticle
from app.stories.models import StoryCluster
from app.stories.store import ClusteringCache
from app.stories.velocity import BREAKING_TOPIC
from tests.conftest import GraphQLClient

PASSWORD = "correct horse battery"

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


async def two_stories_of_one_event(services: Services, ids: list[int], titles: list[str]) -> list[int]:
    """Two stories of one event, as early articles can make (the merge pass is what joins them): their ids."""
    now = datetime.now(UTC)
    weights: dict[str, float] = {"plosser": 2, "taper": 1, "weather": 1, "fed": 1}
    async with services.engine.begin() as connection:
        cache = ClusteringCache()
        state = await cache.catch_up(connection, since=now - timedelta(hours=1))
        await cache.reserve_ids(connection, 2)
        made = [state.create(IncomingArticle(i, t, "", str(k), now), weights).id
                for k, (i, t) in enumerate(zip(ids, titles, strict=True))]  # fmt: skip
        await cache.save(connection, datetime.now(UTC))
    return made


async def merge_story(services: Services, old: int, survivor: int) -> None:
    """Story `old` joins story `survivor` in the clustering state, as the merge pass joins them."""
    now = datetime.now(UTC)
    async with services.engine.begin() as connection:
        cache = ClusteringCache()
        state = await cache.catch_up(connection, since=now - timedelta(hours=1))
        state.merge(state.stories[old], state.stories[survivor])
        await cache.save(connection, now)


async def add_breaking_event(services: Services, story_id: int, topics: Sequence[str] = ("world",),
                             languages: Sequence[str] = ("en",)) -> None:  # fmt: skip
    """A `story.breaking` outbox event as app/stories/velocity.py writes it, titled "Story <story_id>"."""
    payload = {"story_id": story_id, "title": f"Story {story_id}", "article_count": 70, "source_count": 6,
               "topics": list(topics), "languages": list(languages), "velocity": 2.3, "sources_in_window": 6,
               "at": datetime.now(UTC).isoformat()}  # fmt: skip
    async with services.db.begin() as session:
        session.add(OutboxEvent(topic=BREAKING_TOPIC, dedupe_key=f"{BREAKING_TOPIC}:{story_id}", payload=payload))


async def sign_up(gql: GraphQLClient, email: str = "reader@example.com") -> str:
    """A new reader's bearer token (their password is PASSWORD)."""
    data = (await gql.run("SignUp", input={"email": email, "password": PASSWORD}))["signUp"]
    assert data["errors"] == []
    token: str = data["token"]
    return token


def global_id(type_name: str, row_id: int) -> str:
    """The id a client sees for a row (strawberry's relay encoding)."""
    return base64.b64encode(f"{type_name}:{row_id}".encode()).decode()
