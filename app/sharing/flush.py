"""Click counters from Redis to PostgreSQL in one batch: daily counts by referrer, the articles' click_count, and
trending engagement for their stories. A batch is written once even if the flush dies after its commit."""

from __future__ import annotations

import logging
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import date, datetime

from prometheus_client import Counter as Metric
from redis.asyncio import Redis
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.resilience.outage import refused_data
from app.sharing import repository as links
from app.sharing.counters import CLICK, REFUSED, ShareCounters
from app.trending.store import record_engagements

log = logging.getLogger(__name__)
BATCH_MEMORY_DAYS = 7
CLICK_WEIGHT = 1.0  # a click on a shared link weighs as a reader's click does in trending (app/trending/store.py)
REFUSALS_BEFORE_SET_ASIDE = 3  # a batch PostgreSQL refuses this often (not for being away) stops blocking the rest
BATCHES_SET_ASIDE = Metric("newsagg_share_click_batches_set_aside", "Click batches PostgreSQL refused "
                   f"{REFUSALS_BEFORE_SET_ASIDE} times (not an outage), kept aside in Redis for 30 days")  # fmt: skip


@dataclass(frozen=True, slots=True)
class Flushed:
    clicks: int  # as counted in Redis (those of links deleted since are not stored by day, but go to the article)
    previews: int
    days: int  # (link, day, referrer) rows written

    def __add__(self, other: Flushed) -> Flushed:
        return Flushed(self.clicks + other.clicks, self.previews + other.previews, self.days + other.days)


async def flush_clicks(db: async_sessionmaker[AsyncSession], redis: Redis, now: datetime) -> Flushed:
    """The clicks waiting in Redis: a batch a failed flush left (PostgreSQL or Redis away), then those counted since.
    A batch stays in Redis until its transaction has committed; its id, written in that transaction, stops a second
    write of it when the flush dies between the two. A batch PostgreSQL refuses three times while reachable (a
    count past its column, say) is set aside in Redis and logged, so the clicks after it are not held up forever."""
    counters = ShareCounters(redis)
    total = Flushed(0, 0, 0)
    for _ in range(2):
        new_id = uuid.uuid4().hex
        taken = await counters.take_batch(new_id)
        if taken is None:
            break
        try:
            total = total + await _write(db, redis, *taken, now)
        except SQLAlchemyError as error:
            if not refused_data(error) or await counters.refused() < REFUSALS_BEFORE_SET_ASIDE:
                raise
            await counters.set_aside(taken[0])
            BATCHES_SET_ASIDE.inc()
            log.error("share clicks: batch %s refused %d times, set aside in Redis under %s%s: %s", taken[0],
                      REFUSALS_BEFORE_SET_ASIDE, REFUSED, taken[0], error)  # fmt: skip
            continue
        await counters.done()
        if taken[0] == new_id:
            break
    return total


async def _write(db: async_sessionmaker[AsyncSession], redis: Redis, batch_id: str, fields: dict[str, int],
                 now: datetime) -> Flushed:  # fmt: skip
    days, article_clicks, story_clicks = _tally(fields)
    async with db.begin() as session:
        if not await links.claim_batch(session, uuid.UUID(batch_id)):
            log.warning("share clicks: batch %s was written already (a flush stopped after its commit)", batch_id)
            return Flushed(0, 0, 0)
        rows = await links.add_days(session, days)
        stories = await links.add_clicks(session, article_clicks)
        await links.forget_batches(session, BATCH_MEMORY_DAYS)
    for article_id, story_id in stories.items():
        story_clicks[story_id] += article_clicks[article_id]
    # after the commit and before the batch leaves Redis: a batch counts at most once in trending. Redis failing right
    # here loses its engagement (the next flush finds the batch written and drops it); its clicks are stored.
    await record_engagements(redis, {story: CLICK_WEIGHT * n for story, n in story_clicks.items()}, now)
    return Flushed(sum(d.clicks for d in days), sum(d.previews for d in days), rows)


def _tally(fields: dict[str, int]) -> tuple[list[links.DayCount], Counter[int], Counter[int]]:
    """Per (link, day, host) counts; clicks per article; clicks of links that lead to no article, per story."""
    per_day: dict[tuple[int, date, str], list[int]] = defaultdict(lambda: [0, 0])
    articles: Counter[int] = Counter()
    stories: Counter[int] = Counter()
    for field, count in fields.items():
        try:
            link, article, story, day, host, kind = field.split("|")
            key = (int(link), date.fromisoformat(day), host)
        except ValueError:
            log.warning("share clicks: counter %r is not one of ours, dropped", field[:200])
            continue
        per_day[key][0 if kind == CLICK else 1] += count
        if kind == CLICK and article != "0":
            articles[int(article)] += count
        elif kind == CLICK and story != "0":
            stories[int(story)] += count
    days = [links.DayCount(link, day, host, c, p) for (link, day, host), (c, p) in per_day.items()]
    return days, articles, stories
