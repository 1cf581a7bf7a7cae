"""The strawberry schema: queries, mutations, subscriptions, and the limits every document must respect."""

from __future__ import annotations

from typing import Any

import strawberry
from strawberry.extensions import AddValidationRules, MaxTokensLimiter, ParserCache, ValidationCache
from strawberry.schema.config import StrawberryConfig
from strawberry.types import ExecutionContext, ExecutionResult

from app.api.analysis.cost import QueryCost
from app.api.analysis.rule import shape_rule
from app.api.event_executor import EventScopedExecutor
from app.api.internal_errors import InternalErrors, mask
from app.api.mutations import preferences
from app.api.mutations.accounts import (
    ApiKeyPayload,
    AuthPayload,
    LogOutPayload,
    api_key_create_resolver,
    api_key_revoke_resolver,
    log_in_resolver,
    log_out_resolver,
    sign_up_resolver,
)
from app.api.mutations.engagement import EngagementPayload, engagement_record
from app.api.mutations.preferences import ViewerPayload
from app.api.mutations.share_link import ShareLinkCreatePayload, share_link_create
from app.api.mutations.source_create import SourceCreatePayload, source_create
from app.api.mutations.source_delete import SourceDeletePayload, source_delete
from app.api.mutations.source_refresh import SourceRefreshPayload, source_refresh
from app.api.mutations.source_update import SourceUpdatePayload, source_update
from app.api.mutations.sources_import import SourcesImportPayload, sources_import
from app.api.observability import OperationMetrics
from app.api.persisted import PersistedQueryExtension
from app.api.queries import Query
from app.api.rate_limit import RateLimiter
from app.api.request_errors import RequestErrorCodes
from app.api.response_cache import ResponseCache, lifetimes
from app.api.scalars import SCALARS
from app.api.subscriptions import Subscription
from app.api.text_input import TextInputCheck
from app.api.types.article import ArticleNode
from app.api.types.breaking import BreakingEvent
from app.api.types.source import SourceNode
from app.api.types.story import StoryNode
from app.settings import Settings
from graphql import ASTValidationRule, GraphQLError


@strawberry.type
class Mutation:
    source_create: SourceCreatePayload = strawberry.mutation(
        resolver=source_create,
        description="Add a feed to crawl (administrators only, unless NEWSAGG_OPEN_SOURCE_ADMIN; `authority`: "
        "administrators only).",
    )
    source_update: SourceUpdatePayload = strawberry.mutation(
        resolver=source_update,
        description="Rename, refile, pause, resume or re-pace a source (as sourceCreate; `authority`: administrators).",
    )
    source_delete: SourceDeletePayload = strawberry.mutation(
        resolver=source_delete,
        description="Delete a source and its articles; stories keep their other articles (administrators only).",
    )
    sources_import: SourcesImportPayload = strawberry.mutation(
        resolver=sources_import, description="Add every feed of an OPML document (folders become categories)."
    )
    source_refresh: SourceRefreshPayload = strawberry.mutation(
        resolver=source_refresh, description="Fetch a source now; a paused or dead source gets a fresh start."
    )
    sign_up: AuthPayload = strawberry.mutation(resolver=sign_up_resolver, description="Create an account; signed in.")
    log_in: AuthPayload = strawberry.mutation(resolver=log_in_resolver, description="Sign in: a new bearer token.")
    log_out: LogOutPayload = strawberry.mutation(
        resolver=log_out_resolver, description="End this session (`everywhere`: every session of this account)."
    )
    api_key_create: ApiKeyPayload = strawberry.mutation(
        resolver=api_key_create_resolver, description="A new API key for an app (signed-in users)."
    )
    api_key_revoke: ApiKeyPayload = strawberry.mutation(
        resolver=api_key_revoke_resolver, description="Revoke one of your API keys."
    )
    topic_follow: ViewerPayload = strawberry.mutation(resolver=preferences.topic_follow, description="Follow a topic.")
    topic_unfollow: ViewerPayload = strawberry.mutation(
        resolver=preferences.topic_unfollow, description="Stop following."
    )
    source_follow: ViewerPayload = strawberry.mutation(
        resolver=preferences.source_follow, description="Follow a source."
    )
    source_unfollow: ViewerPayload = strawberry.mutation(
        resolver=preferences.source_unfollow, description="Stop following a source."
    )
    source_mute: ViewerPayload = strawberry.mutation(
        resolver=preferences.source_mute, description="Never show this source to you."
    )
    source_unmute: ViewerPayload = strawberry.mutation(resolver=preferences.source_unmute, description="Unmute.")
    engagement_record: EngagementPayload = strawberry.mutation(
        resolver=engagement_record,
        description="What you did with an article: it moves your interests at once (idempotent per session).",
    )
    share_link_create: ShareLinkCreatePayload = strawberry.mutation(
        resolver=share_link_create,
        description="A short link to an article or story that counts its clicks (signed-in readers; sharing the same "
        "thing again returns the same link; NEWSAGG_SHARE_LINKS_PER_HOUR new links an hour).",
    )
    preferred_languages_set: ViewerPayload = strawberry.mutation(
        resolver=preferences.preferred_languages_set,
        description="The languages you read (ISO 639-1 codes, most preferred first; empty: all).",
    )


class NewsaggSchema(strawberry.Schema):
    """Unexpected errors are logged where they are answered, with the request id (app/api/internal_errors.py); a
    client's bad cursor or malformed id is its answer, not our incident."""

    def process_errors(self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None) -> None:
        pass

    async def execute(self, query: str | None, *args: Any, **kwargs: Any) -> ExecutionResult:
        result = await super().execute(query, *args, **kwargs)
        mask(result)  # an extension that failed as the operation started
        return result


def build_schema(settings: Settings) -> strawberry.Schema:
    extensions = _extensions(settings)
    return NewsaggSchema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        types=[SourceNode, ArticleNode, StoryNode, BreakingEvent],
        extensions=extensions,
        config=StrawberryConfig(scalar_map=SCALARS),
        execution_context_class=EventScopedExecutor,
    )


def _extensions(settings: Settings) -> list[Any]:
    """Factories, one extension per request. The shape rule is built once, so the validation cache, keyed on the
    rule classes, hits; the parser and validation LRU caches themselves are process-wide. QueryCost comes before
    any other extension that acts on execution: they read the price it stores."""
    rules: list[type[ASTValidationRule]] = [shape_rule(settings)]
    ttl_by_field = lifetimes(settings.feed_cache_seconds)
    limits: list[Any] = [
        OperationMetrics,  # first, so it sees every other extension's refusal
        InternalErrors,  # then: it sees what every other extension raises (metrics count what it answers)
        # then: the others see the document a persisted query's hash stands for
        lambda: PersistedQueryExtension(settings),
        RequestErrorCodes,
        lambda: MaxTokensLimiter(max_token_count=settings.query_max_tokens),
        lambda: AddValidationRules(rules),
        lambda: QueryCost(settings),
        RateLimiter,  # charges the price QueryCost set, before the response cache (a cached answer pays)
        TextInputCheck,  # after the charge: hostile input pays too
        lambda: ResponseCache(ttl_by_field=ttl_by_field),
    ]
    size = settings.graphql_cache_size
    caches: list[Any] = [lambda: ParserCache(maxsize=size), lambda: ValidationCache(maxsize=size)] if size else []
    return limits + caches
