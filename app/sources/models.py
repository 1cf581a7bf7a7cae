"""Tables of sources, their crawl schedule (hot, kept apart) and the fetch log."""

from __future__ import annotations

import enum
from datetime import datetime

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Enum,
    Float,
    ForeignKey,
    Index,
    Integer,
    SmallInteger,
    String,
    Text,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, created_at_column


def _enum(cls: type[enum.Enum], name: str) -> Enum:
    return Enum(cls, name=name, values_callable=lambda members: [m.value for m in members])


class SourceStatus(enum.StrEnum):
    ACTIVE = "active"
    PAUSED = "paused"
    DEAD = "dead"


class SourceKind(enum.StrEnum):
    RSS = "rss"
    ATOM = "atom"
    JSON = "json"
    WEBSUB = "websub"


class ClaimStatus(enum.StrEnum):
    PENDING = "pending"
    IN_FLIGHT = "in_flight"


class Circuit(enum.StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class Source(Base):
    __tablename__ = "sources"
    __table_args__ = (
        CheckConstraint("authority >= 0 AND authority <= 1", name="authority_range"),
        CheckConstraint("min_interval_s > 0 AND max_interval_s >= min_interval_s", name="interval_bounds"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    feed_url: Mapped[str] = mapped_column(Text, unique=True)
    site_url: Mapped[str | None] = mapped_column(Text)
    name: Mapped[str] = mapped_column(String(300))
    kind: Mapped[SourceKind] = mapped_column(_enum(SourceKind, "source_kind"), default=SourceKind.RSS)
    category: Mapped[str | None] = mapped_column(String(100))
    language: Mapped[str | None] = mapped_column(String(16))
    authority: Mapped[float] = mapped_column(Float, default=0.5, server_default=text("0.5"))
    min_interval_s: Mapped[int] = mapped_column(Integer)
    max_interval_s: Mapped[int] = mapped_column(Integer)
    status: Mapped[SourceStatus] = mapped_column(
        _enum(SourceStatus, "source_status"), default=SourceStatus.ACTIVE, index=True
    )
    etag: Mapped[str | None] = mapped_column(Text)
    last_modified: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = created_at_column()
    # WebSub: the hub pushes this feed to /websub/<token>, signed with the secret
    websub_hub: Mapped[str | None] = mapped_column(Text)
    websub_topic: Mapped[str | None] = mapped_column(Text)
    websub_state: Mapped[str | None] = mapped_column(String(16))  # subscribing | subscribed | denied | failed
    websub_token: Mapped[str | None] = mapped_column(String(64), unique=True)
    websub_secret: Mapped[str | None] = mapped_column(String(128))
    websub_lease_expires_at: Mapped[datetime | None]
    websub_updated_at: Mapped[datetime | None]
    # fetch each article's page for its full text when the feed carries only a summary (a feed's own full text,
    # content:encoded, is always used without a fetch)
    article_text: Mapped[bool] = mapped_column(default=True, server_default=text("true"))
    # the columns an administrator chose (name, site_url); the others follow the feed's own title and link
    admin_fields: Mapped[list[str]] = mapped_column(
        ARRAY(String(32)), default=list, server_default=text("'{}'::varchar[]")
    )
    # where the outlet is (ISO 3166-1 alpha-2) and what kind it is (app/places/outlets.py): from an OPML list or an
    # administrator, else inferred from its domain and language (`outlet_inferred`: inference may replace them)
    country: Mapped[str | None] = mapped_column(String(2), index=True)
    outlet_kind: Mapped[str] = mapped_column(String(16), default="unknown", server_default="unknown")
    outlet_inferred: Mapped[bool] = mapped_column(default=True, server_default=text("true"))


class CrawlSchedule(Base):
    __tablename__ = "crawl_schedule"
    __table_args__ = (
        # The scheduler's hot path: due, pending sources in time order.
        Index("ix_crawl_schedule_due", "next_crawl_at", postgresql_where=text("status = 'pending'")),
        # The release of claims whose worker is gone or that outlived the in-flight timeout (app/ingest/scheduler.py).
        Index("ix_crawl_schedule_in_flight", "last_triggered_at", postgresql_where=text("status = 'in_flight'")),
        CheckConstraint("cardinality(hourly_histogram) = 24", name="histogram_24_hours"),
    )

    source_id: Mapped[int] = mapped_column(ForeignKey("sources.id", ondelete="CASCADE"), primary_key=True)
    next_crawl_at: Mapped[datetime] = mapped_column(server_default=func.now())
    # raised by the pipeline (breaking, trending, WebSub: app/ingest/priority.py), halving every half-life since
    # `priority_at`; orders the claims of due sources
    priority: Mapped[int] = mapped_column(SmallInteger, default=0, server_default=text("0"))
    priority_at: Mapped[datetime | None]
    websub_raised_at: Mapped[datetime | None]  # a hub's push last raised the priority: once per window (a flood)
    status: Mapped[ClaimStatus] = mapped_column(
        _enum(ClaimStatus, "claim_status"), default=ClaimStatus.PENDING, server_default="pending"
    )
    last_triggered_at: Mapped[datetime | None]  # when the current claim was made: it names the claim
    claimed_by: Mapped[str | None] = mapped_column(String(100))  # the worker running (or enqueueing) the claim's job
    last_fetched_at: Mapped[datetime | None]
    consecutive_failures: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    gone_streak: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    gone_since: Mapped[datetime | None]  # the first 404/410 of the current gone streak
    throttle_streak: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    redirect_url: Mapped[str | None] = mapped_column(Text)
    redirect_streak: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    circuit: Mapped[Circuit] = mapped_column(
        _enum(Circuit, "circuit_state"), default=Circuit.CLOSED, server_default="closed"
    )
    articles_per_hour: Mapped[float] = mapped_column(Float, default=0.0, server_default=text("0"))
    hourly_histogram: Mapped[list[int]] = mapped_column(
        ARRAY(Integer), default=lambda: [0] * 24, server_default=text("array_fill(0, ARRAY[24])")
    )
    last_error: Mapped[str | None] = mapped_column(Text)


class FetchLog(Base):
    __tablename__ = "fetch_log"
    __table_args__ = (Index("ix_fetch_log_source_fetched", "source_id", "fetched_at"),)

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    source_id: Mapped[int] = mapped_column(ForeignKey("sources.id", ondelete="CASCADE"))
    fetched_at: Mapped[datetime] = mapped_column(server_default=func.now(), index=True)
    status_code: Mapped[int | None] = mapped_column(SmallInteger)
    duration_ms: Mapped[int] = mapped_column(Integer)
    bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    items_seen: Mapped[int] = mapped_column(Integer, default=0)
    items_new: Mapped[int] = mapped_column(Integer, default=0)
    error_class: Mapped[str | None] = mapped_column(String(64))
    error_message: Mapped[str | None] = mapped_column(Text)
