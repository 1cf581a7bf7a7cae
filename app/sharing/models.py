"""Tables of share links, their daily clicks by referrer host, the click batches flushed, and the links' signing key."""

from __future__ import annotations

import enum
import uuid
from datetime import date, datetime

from sqlalchemy import BigInteger, Date, Enum, ForeignKey, Index, Integer, LargeBinary, SmallInteger, String, text
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, created_at_column


class ShareTargetKind(enum.StrEnum):
    ARTICLE = "article"
    STORY = "story"


class ShareLink(Base):
    """One reader's link to one article or story (one per reader and target). A target deleted later leaves the link
    with neither id: its code answers 410 Gone."""

    __tablename__ = "share_links"
    __table_args__ = (
        Index(
            "uq_share_links_creator_article",
            "creator_id",
            "article_id",
            unique=True,
            postgresql_where=text("article_id IS NOT NULL AND NOT from_merge"),
        ),
        Index(
            "uq_share_links_creator_story",
            "creator_id",
            "story_id",
            unique=True,
            postgresql_where=text("story_id IS NOT NULL"),
        ),
        Index("ix_share_links_creator_id", "creator_id"),
        Index("ix_share_links_article_id", "article_id"),
        Index("ix_share_links_story_id", "story_id"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    code: Mapped[str] = mapped_column(String(16), unique=True)
    creator_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    target_kind: Mapped[ShareTargetKind] = mapped_column(
        Enum(ShareTargetKind, name="share_target_kind", values_callable=lambda ms: [m.value for m in ms])
    )
    article_id: Mapped[int | None] = mapped_column(ForeignKey("articles.id", ondelete="SET NULL"))
    story_id: Mapped[int | None] = mapped_column(ForeignKey("story_clusters.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = created_at_column()
    # carried to this article when the article it was made for proved to be this one (app/articles/merging.py)
    from_merge: Mapped[bool] = mapped_column(default=False, server_default=text("false"))


class ShareLinkDay(Base):
    """Clicks (people following the link) and previews (link unfurlers, prefetches, HEAD) of one link on one UTC day
    from one referrer host ('' when the visit named none)."""

    __tablename__ = "share_link_days"

    link_id: Mapped[int] = mapped_column(ForeignKey("share_links.id", ondelete="CASCADE"), primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    referrer_host: Mapped[str] = mapped_column(String(100), primary_key=True)
    clicks: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    previews: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))


class ShareClickBatch(Base):
    """A batch of Redis click counters already written: a flush that died after its commit is not applied twice."""

    __tablename__ = "share_click_batches"
    __table_args__ = (Index("ix_share_click_batches_flushed_at", "flushed_at"),)

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    flushed_at: Mapped[datetime] = created_at_column()


class ShareLinkEviction(Base):
    """A code whose cached destination may be stale, queued by triggers (migration 0026) for the workers to evict."""

    __tablename__ = "share_link_evictions"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    code: Mapped[str] = mapped_column(String(16))
    queued_at: Mapped[datetime] = created_at_column()


class ShareLinkKey(Base):
    """The key that signs share codes (one row, made on first use): a code whose tag does not verify is refused
    without a lookup. Deleting it breaks every link issued."""

    __tablename__ = "share_link_keys"

    id: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    key: Mapped[bytes] = mapped_column(LargeBinary)
