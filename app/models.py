"""Every table, imported once so the metadata (and Alembic) sees the whole data model."""

from app.archive.models import ArchivedFetch, FetchedArticle
from app.articles.models import Article
from app.db.base import Base
from app.documents.models import TrustedDocument
from app.entities.models import ArticleEntity
from app.extraction.models import ArticleText
from app.notifications.models import (
    AlertHour,
    AlertRules,
    Delivery,
    DeliveryAttempt,
    Fanout,
    Notification,
    StoryFollow,
    WebhookEndpoint,
)
from app.outbox.models import OutboxEvent
from app.places.models import ArticlePlace
from app.search.models import SearchTerm
from app.sharing.models import ShareClickBatch, ShareLink, ShareLinkDay, ShareLinkKey
from app.sources.models import CrawlSchedule, FetchLog, Source
from app.stories.models import StoryCluster, StoryMergePass, StoryVocabulary
from app.users.models import (
    ApiKey,
    ReadEvent,
    SourceFollow,
    SourceMute,
    TopicFollow,
    User,
    UserInterest,
    UserSession,
)
from app.workers.models import Worker

__all__ = [
    "AlertHour",
    "AlertRules",
    "ApiKey",
    "ArchivedFetch",
    "Article",
    "ArticleEntity",
    "ArticlePlace",
    "ArticleText",
    "Base",
    "CrawlSchedule",
    "Delivery",
    "DeliveryAttempt",
    "Fanout",
    "FetchLog",
    "FetchedArticle",
    "Notification",
    "OutboxEvent",
    "ReadEvent",
    "SearchTerm",
    "ShareClickBatch",
    "ShareLink",
    "ShareLinkDay",
    "ShareLinkKey",
    "Source",
    "SourceFollow",
    "SourceMute",
    "StoryCluster",
    "StoryFollow",
    "StoryMergePass",
    "StoryVocabulary",
    "TopicFollow",
    "TrustedDocument",
    "User",
    "UserInterest",
    "UserSession",
    "WebhookEndpoint",
    "Worker",
]
