"""Test factories: sources, articles, stories and breaking events in the database; readers through the API; settings
for a Meilisearch index of a test's own."""

from __future__ import annotations

import base64
import itertools
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from app.articles.models import Article
from app.outbox.models import OutboxEvent
from app.services import Services
from app.settings import Settings
from app.sources.service import SourceRequest, create_source
from app.stories.clustering import IncomingArticle
from app.stories.models import StoryCluster
from app.stories.store import ClusteringCache
from app.stories.velocity import BREAKING_TOPIC
from app.users.service import set_admin
from tests.conftest import GraphQLClient

PASSWORD = "correct horse battery"
NO_MEILI = ("MEILI_URL is not set: this needs a Meilisearch server, and none can be installed on this machine "
            "(the PostgreSQL backend runs the same search contract)")  # fmt: skip

_serial = itertools.count(1)


async def add_source(services: Services, settings: Settings, name: str, authority: float = 0.5,
                     language: str | None = "en") -> int:  # fmt: skip
    request = SourceRequest(feed_url=f"http://127.0.0.1:9/{name}", name=name, language=language, authority=authority)
    async with services.db.begin() as session:
        return (await create_source(session, settings, request)).id


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


async def search_newsroom(services: Services, settings: Settings) -> list[int]:
    """Four outlets and three stories to search: a flood in Valencia (all four outlets, 2 hours old), a central bank
    holding rates (two, 10 days old), flood insurance in French (one, 1 hour old). Returns the outlets' ids."""
    outlets = [await add_source(services, settings, f"outlet{i}") for i in range(4)]
    await add_story(services, StorySpec("Flood waters rise in Valencia", outlets, topics=["world"],
                                        age=timedelta(hours=2)))  # fmt: skip
    await add_story(services, StorySpec("Central bank holds interest rates", outlets[:2], topics=["business"],
                                        age=timedelta(days=10)))  # fmt: skip
    await add_story(services, StorySpec("Rates of flood insurance climb", outlets[:1], topics=["business"],
                                        languages=["fr"], age=timedelta(hours=1)))  # fmt: skip
    return outlets


async def two_stories_of_one_event(services: Services, ids: list[int], titles: list[str],
                                   published: datetime | None = None) -> list[int]:  # fmt: skip
    """Stories of one event (one per article), as early articles can make (the merge pass is what joins them): their
    ids. Their articles were published now, or at `published` (a feed's lag)."""
    now = published or datetime.now(UTC)
    weights: dict[str, float] = {"plosser": 2, "taper": 1, "weather": 1, "fed": 1}
    cache = ClusteringCache()
    async with cache.locked(services.engine) as connection:
        await cache.reserve(connection, len(ids))
        state = await cache.catch_up(connection, since=now - timedelta(hours=1))
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


async def administrator(gql: GraphQLClient, services: Services, email: str = "admin@example.com") -> GraphQLClient:
    """`gql` as a new account made administrator, as `newsagg users grant-admin` makes one."""
    token = await sign_up(gql, email)
    async with services.db.begin() as session:
        assert await set_admin(session, email, True)
    return gql.as_(token)


async def log_in(gql: GraphQLClient, email: str, password: str = PASSWORD) -> dict[str, Any]:
    """The `logIn` payload: a new session's token, or the errors of a refused sign-in."""
    payload: dict[str, Any] = (await gql.run("LogIn", input={"email": email, "password": password}))["logIn"]
    return payload


def global_id(type_name: str, row_id: int) -> str:
    """The id a client sees for a row (strawberry's relay encoding)."""
    return base64.b64encode(f"{type_name}:{row_id}".encode()).decode()


def meili_settings(settings: Settings, url: str, **extra: Any) -> Settings:
    """`settings` with the Meilisearch at `url` (MEILI_MASTER_KEY if it needs one) and an index of the test's own."""
    return settings.model_copy(update={"meili_url": url, "meili_api_key": os.environ.get("MEILI_MASTER_KEY"),
                                       "meili_index": f"newsagg_test_{uuid.uuid4().hex[:10]}", **extra})  # fmt: skip
