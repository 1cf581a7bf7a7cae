"""What readers are served: feeds, stories' velocity and merging, search, share links, and the demo's clock."""

from __future__ import annotations

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings


class ServingSettings(BaseSettings):
    """What readers are served (part of `app.settings.Settings`)."""

    # --- feeds (DESIGN §4 ranking) -----------------------------------------------------------------------------------
    feed_window_hours: float = Field(default=72, description="Feeds rank stories updated within this many hours.")
    feed_candidates: int = Field(default=500, description="Stories the ranker orders for one feed (its length).")
    feed_cache_seconds: float = Field(
        default=60, description="A ranked feed is reused this long (a reader's change of interests starts afresh)."
    )
    feed_snapshot_minutes: float = Field(
        default=30, description="How long a feed's cursors stay valid: pages come from the ranking they began on."
    )

    # --- stories -----------------------------------------------------------------------------------------------------
    velocity_window_seconds: float = Field(
        default=1800,
        gt=0,
        description="A story's velocity counts the articles that joined it in this window, per minute; above 2 a "
        "minute from 5 outlets it is breaking (`up --demo` makes it the 12 hours of news the replay's speed "
        "compresses: 72 s at 600).",
    )

    story_merge_seconds: int = Field(
        default=120,
        description="How often stories that prove to be one are merged (and breaking ones cool down): "
        "a divisor of 60, or whole minutes dividing an hour (`up --demo` makes it 10).",
    )

    # --- search ------------------------------------------------------------------------------------------------------
    meili_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("MEILI_URL", "NEWSAGG_MEILI_URL"),
        description="Meilisearch URL; when set, search runs on Meilisearch (PostgreSQL full text when it is down), "
        "and the worker keeps its index in sync. Unset: PostgreSQL full-text search only.",
    )
    meili_api_key: str | None = Field(
        default=None,
        validation_alias=AliasChoices("MEILI_API_KEY", "MEILI_MASTER_KEY", "NEWSAGG_MEILI_API_KEY"),
        description="Meilisearch API key (the master key, or a key allowed to search, index and set settings).",
    )
    meili_index: str = Field(default="articles", description="Name of the Meilisearch index of articles.")
    search_candidates: int = Field(
        default=1000,
        description="PostgreSQL search ranks the newest this many matches of a query (pages walk them); narrower "
        "filters reach older ones.",
    )
    search_timeout_seconds: float = Field(
        default=2, description="A Meilisearch search slower than this fails over to PostgreSQL search."
    )
    search_down_seconds: float = Field(
        default=10,
        description="After a failed Meilisearch search, the process searches PostgreSQL this long before trying again.",
    )
    search_sync_batch: int = Field(default=1000, description="Articles sent to the search index in one request.")
    search_retry_max_seconds: float = Field(
        default=30,
        description="Longest wait before the index sync retries events the index refused (back-off doubles up to it).",
    )

    # --- share links -------------------------------------------------------------------------------------------------
    share_links_per_hour: int = Field(
        default=60,
        ge=1,
        description="Share links a reader may create per hour (shareLinkCreate; sharing the same thing again is free).",
    )
    share_link_cache_seconds: int = Field(
        default=24 * 3600,
        gt=0,
        description="How long Redis keeps a share code's destination (filled from PostgreSQL on a miss); a deleted "
        "target's is evicted by the workers within NEWSAGG_SHARE_CLICK_FLUSH_SECONDS.",
    )
    share_click_flush_seconds: int = Field(
        default=30,
        description="How often the workers write share-link clicks counted in Redis to PostgreSQL (divides a minute "
        "or an hour): `clicks` and click_count lag this much.",
    )
    share_story_url: str | None = Field(
        default=None,
        description="A story's share link leads here, `{story_id}` replaced (e.g. https://news.example/stories/"
        "{story_id}); unset: to the story's representative article.",
    )

    @field_validator("share_story_url")
    @classmethod
    def _story_page(cls, url: str | None) -> str | None:
        """A share link never leads anywhere but an http(s) page: no open redirect through a misconfiguration."""
        if url and not url.startswith(("https://", "http://")):
            raise ValueError("must be an http(s) URL")
        return url or None

    # --- demo --------------------------------------------------------------------------------------------------------
    demo_speed: float = Field(
        default=600,
        gt=0,
        description="`up --demo` replays the snapshots this many times faster than they happened "
        "(`--speed`; 600: ten minutes of news a second, so stories gather and break within two minutes).",
    )
    demo_hours: float = Field(
        default=24, gt=0, description="`up --demo` replays the busiest stretch of this many hours of the snapshots."
    )
