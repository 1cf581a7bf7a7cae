"""A reader's interest vector: topic -> weight, learned from what they do (DESIGN §4).

Each engagement moves the vector towards the article's topics by an exponential moving average (alpha 0.1) of the
action's signal (click/read 1, share/save 2, dismiss -1; a read of 30 s or more counts double; an article without
a topic moves nothing); between engagements every weight decays by 0.95 a day. Explicit follows weigh more: a
followed topic counts at least FOLLOWED. Engagements are idempotent per (reader, article, session, action): a repeat
changes nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.articles.models import Article
from app.users.errors import AccountErrorCode, AccountRejected
from app.users.models import EngagementAction, ReadEvent, UserInterest
from app.users.preferences import followed_topics

ALPHA = 0.1
DAILY_DECAY = 0.95
FOLLOWED = 1.0
LONG_READ_MS = 30_000
SIGNAL = {EngagementAction.CLICK: 1.0, EngagementAction.READ: 1.0, EngagementAction.SHARE: 2.0,
          EngagementAction.SAVE: 2.0, EngagementAction.DISMISS: -1.0}  # fmt: skip
FORGOTTEN = 1e-3  # weights smaller than this are dropped


@dataclass(frozen=True, slots=True)
class Recorded:
    recorded: bool  # False: this engagement was already recorded (nothing changed)
    weights: dict[str, float]
    story_id: int | None = None  # the article's story, if it is in one


def decayed(weights: dict[str, float], since: datetime, now: datetime) -> dict[str, float]:
    days = max((now - since).total_seconds() / 86400, 0.0)
    factor = DAILY_DECAY**days
    return {t: w * factor for t, w in weights.items()}


def moved(weights: dict[str, float], topics: list[str], signal: float) -> dict[str, float]:
    """One EMA step towards the article's topics (its signal shared among them). An article without a topic (in a
    language the topic classifier does not read) says nothing of them: a step towards none would fade them all."""
    if not topics:
        return weights
    share = {t: signal / len(topics) for t in topics}
    keys = set(weights) | set(share)
    out = {t: (1 - ALPHA) * weights.get(t, 0.0) + ALPHA * share.get(t, 0.0) for t in keys}
    return {t: w for t, w in out.items() if math.fabs(w) >= FORGOTTEN}


async def record(session: AsyncSession, user_id: int, article_id: int, action: EngagementAction, session_id: str,
                 dwell_ms: int | None, now: datetime) -> Recorded:  # fmt: skip
    article = (
        await session.execute(select(Article.topics, Article.cluster_id).where(Article.id == article_id))
    ).first()
    if article is None:
        raise AccountRejected(AccountErrorCode.NOT_FOUND, "no such article", "articleId")
    topics, story_id = article
    inserted = await session.scalar(
        insert(ReadEvent).values(user_id=user_id, article_id=article_id, session_id=session_id, action=action,
                                 dwell_ms=dwell_ms).on_conflict_do_nothing().returning(ReadEvent.id))  # fmt: skip
    await session.execute(insert(UserInterest).values(user_id=user_id).on_conflict_do_nothing())
    row = await session.scalar(select(UserInterest).where(UserInterest.user_id == user_id).with_for_update())
    assert row is not None
    weights = dict(row.topic_weights)
    if inserted is None:
        return Recorded(False, weights, story_id)
    signal = SIGNAL[action] * (2.0 if action == EngagementAction.READ and (dwell_ms or 0) >= LONG_READ_MS else 1.0)
    weights = moved(decayed(weights, row.updated_at, now), list(topics), signal)
    row.topic_weights, row.version, row.updated_at = weights, row.version + 1, now
    return Recorded(True, weights, story_id)


async def interests(session: AsyncSession, user_id: int, now: datetime) -> dict[str, float]:
    """The reader's interests now: learned weights, decayed to today, with followed topics at least FOLLOWED."""
    row = await session.scalar(select(UserInterest).where(UserInterest.user_id == user_id))
    weights = decayed(dict(row.topic_weights), row.updated_at, now) if row else {}
    for topic in await followed_topics(session, user_id):
        weights[topic] = max(weights.get(topic, 0.0), FOLLOWED)
    return weights
