"""The story_clusters table (a merged story points at the story it was merged into), the vocabulary, and where the
merge passes have got to."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Float,
    ForeignKey,
    Index,
    Integer,
    Sequence,
    String,
    Text,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base


class StoryCluster(Base):
    __tablename__ = "story_clusters"
    __table_args__ = (
        Index("ix_story_clusters_last_updated", "last_updated_at"),
        Index("ix_story_clusters_first_seen", "first_seen_at", "id"),
        Index("ix_story_clusters_revision", "revision"),
        Index("ix_story_clusters_topics", "topics", postgresql_using="gin"),
        Index("ix_story_clusters_languages", "languages", postgresql_using="gin"),
        Index("ix_story_clusters_breaking", "breaking_started_at", postgresql_where=text("is_breaking")),
        # deleting articles and stories (migration 0013)
        Index("ix_story_clusters_representative", "representative_article_id"),
        Index("ix_story_clusters_merged_into", "merged_into_id", postgresql_where=text("merged_into_id IS NOT NULL")),
        # retention: stories left empty or merged away (migration 0015)
        Index(
            "ix_story_clusters_retired",
            "last_updated_at",
            postgresql_where=text("article_count = 0 OR merged_into_id IS NOT NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    title: Mapped[str] = mapped_column(Text)
    representative_article_id: Mapped[int | None] = mapped_column(
        ForeignKey("articles.id", ondelete="SET NULL", use_alter=True)
    )
    simhash: Mapped[int | None] = mapped_column(BigInteger)
    primary_topic: Mapped[str | None] = mapped_column(String(32))
    topics: Mapped[list[str]] = mapped_column(ARRAY(String(32)), default=list, server_default=text("'{}'::varchar[]"))
    topic_counts: Mapped[dict[str, int]] = mapped_column(JSONB, default=dict, server_default=text("'{}'::jsonb"))
    languages: Mapped[list[str]] = mapped_column(
        ARRAY(String(16)), default=list, server_default=text("'{}'::varchar[]")
    )
    # (epoch seconds, source id) of the articles that joined in the velocity window (app/stories/velocity.py)
    recent_arrivals: Mapped[list[list[float | str]]] = mapped_column(
        JSONB, default=list, server_default=text("'[]'::jsonb")
    )
    article_count: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    source_count: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    velocity: Mapped[float] = mapped_column(Float, default=0.0, server_default=text("0"))
    is_breaking: Mapped[bool] = mapped_column(Boolean, default=False, server_default=text("false"))
    breaking_started_at: Mapped[datetime | None]
    first_seen_at: Mapped[datetime] = mapped_column(server_default=func.now())
    last_updated_at: Mapped[datetime] = mapped_column(server_default=func.now())
    merged_into_id: Mapped[int | None] = mapped_column(ForeignKey("story_clusters.id", ondelete="SET NULL"))
    # the clustering state (app/stories/store.py): term weights summed over the story's articles, their norm, the
    # revision that last wrote the row, and the sources that covered it
    centroid: Mapped[dict[str, float]] = mapped_column(JSONB, default=dict, server_default=text("'{}'::jsonb"))
    centroid_norm: Mapped[float] = mapped_column(Float, default=0.0, server_default=text("0"))
    revision: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))  # see app/stories/store
    source_ids: Mapped[list[int]] = mapped_column(
        ARRAY(BigInteger), default=list, server_default=text("'{}'::bigint[]")
    )


class StoryVocabulary(Base):
    """Document frequency of each term over every article clustered (the empty term counts the articles), and when
    an article last had it: retention forgets the rare terms unseen for long (app/retention/)."""

    __tablename__ = "story_vocabulary"
    __table_args__ = (Index("ix_story_vocabulary_revision", "revision"),
                      Index("ix_story_vocabulary_seen_at", "seen_at"))  # fmt: skip

    term: Mapped[str] = mapped_column(String(64), primary_key=True)  # app/stories/state.TERM_LENGTH
    documents: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))
    revision: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))
    seen_at: Mapped[datetime] = mapped_column(server_default=func.now())


class StoryMergePass(Base):
    """One row: the revision the latest merge pass saved with. The next pass, on whichever worker, compares the
    stories written from that revision on (app/stories/store.py)."""

    __tablename__ = "story_merge_passes"
    __table_args__ = (CheckConstraint("id", name="one_row"),)

    id: Mapped[bool] = mapped_column(Boolean, primary_key=True, default=True, server_default=text("true"))
    revision: Mapped[int] = mapped_column(BigInteger)


# Stamps every write of clustering state, in commit order (writers hold the clustering lock).
STORY_REVISION = Sequence("story_revision_seq", metadata=Base.metadata)
