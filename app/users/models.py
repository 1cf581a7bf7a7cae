"""Tables of users, API keys, follows, mutes, read events and interest vectors."""

from __future__ import annotations

import enum
from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    Enum,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, created_at_column


class EngagementAction(enum.StrEnum):
    CLICK = "click"
    READ = "read"
    SHARE = "share"
    SAVE = "save"
    DISMISS = "dismiss"


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    email: Mapped[str] = mapped_column(String(320))
    password_hash: Mapped[str] = mapped_column(Text)
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False, server_default=text("false"))
    preferred_languages: Mapped[list[str]] = mapped_column(
        ARRAY(String(16)), default=list, server_default=text("'{}'::varchar[]")
    )
    created_at: Mapped[datetime] = created_at_column()
    home_region: Mapped[str | None] = mapped_column(String(2))  # ISO 3166-1 alpha-2: local stories rank higher

    __table_args__ = (Index("uq_users_email_lower", func.lower(email), unique=True),)


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    key_hash: Mapped[str] = mapped_column(String(128), unique=True)
    created_at: Mapped[datetime] = created_at_column()
    last_used_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]


class UserSession(Base):
    """A signed-in session: its bearer token is stored as a SHA-256 digest, never as itself."""

    __tablename__ = "user_sessions"
    __table_args__ = (  # retention: sign-ins that ended (migration 0015)
        Index("ix_user_sessions_expires_at", "expires_at"),
        Index("ix_user_sessions_revoked_at", "revoked_at", postgresql_where=text("revoked_at IS NOT NULL")),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = created_at_column()
    expires_at: Mapped[datetime]
    revoked_at: Mapped[datetime | None]


class TopicFollow(Base):
    __tablename__ = "topic_follows"

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    topic: Mapped[str] = mapped_column(String(32), primary_key=True)
    created_at: Mapped[datetime] = created_at_column()


class SourceFollow(Base):
    __tablename__ = "source_follows"
    __table_args__ = (Index("ix_source_follows_source_id", "source_id"),)

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    source_id: Mapped[int] = mapped_column(ForeignKey("sources.id", ondelete="CASCADE"), primary_key=True)
    created_at: Mapped[datetime] = created_at_column()


class SourceMute(Base):
    __tablename__ = "source_mutes"
    __table_args__ = (Index("ix_source_mutes_source_id", "source_id"),)

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    source_id: Mapped[int] = mapped_column(ForeignKey("sources.id", ondelete="CASCADE"), primary_key=True)
    created_at: Mapped[datetime] = created_at_column()


class ReadEvent(Base):
    __tablename__ = "read_events"
    __table_args__ = (
        UniqueConstraint("user_id", "article_id", "session_id", "action"),
        Index("ix_read_events_user_at", "user_id", "at"),
        Index("ix_read_events_article_id", "article_id"),  # deleting an article (migration 0013)
        Index("ix_read_events_at", "at"),  # retention (migration 0015)
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    article_id: Mapped[int] = mapped_column(ForeignKey("articles.id", ondelete="CASCADE"))
    session_id: Mapped[str] = mapped_column(String(64))
    action: Mapped[EngagementAction] = mapped_column(
        Enum(EngagementAction, name="engagement_action", values_callable=lambda ms: [m.value for m in ms])
    )
    dwell_ms: Mapped[int | None] = mapped_column(Integer)
    at: Mapped[datetime] = mapped_column(server_default=func.now())


class UserInterest(Base):
    __tablename__ = "user_interest"

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    topic_weights: Mapped[dict[str, float]] = mapped_column(JSONB, default=dict, server_default=text("'{}'::jsonb"))
    version: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    updated_at: Mapped[datetime] = mapped_column(server_default=func.now())
