"""Crawl priority over 10,000 sources: how soon articles are fetched after they are published, for the sources of
breaking stories and for the quiet rest, with the pipeline raising the priority of breaking stories' sources and
without it (the baseline), in one run on the same simulated publishing.

The crawl itself is real where it decides anything: the sources and their `crawl_schedule` rows live in a scratch
PostgreSQL database (the real migrations), every 15 s of simulated time the crawl tick's claim (`claim_due`: due
sources, highest decayed priority first, `--batch` per tick) picks what is fetched, each fetch's next time is the
real policy's (`after_success`, the sources' rates as already learned), and the priority is raised with the real
statement (`raise_priority`, as `crawl_priority_job` runs it every minute). Fetching is instantaneous; the clock is
simulated (passed to every statement as `now`).

Publishing: each source publishes at a rate of its own (Poisson; 70% of sources 0.05-2 articles/h, 30% 2-30/h).
`--stories` breaking stories start at random times after a 30-minute warm-up; each is covered by 30 random sources,
which publish on it from about 5 minutes after it starts, every ~6 minutes each, for 45 minutes. As in the real
pipeline (app/stories/velocity.py), a story is breaking once articles of at least 5 of its sources have been
fetched in the last 30 minutes, and what it raises are the sources whose articles on it have been fetched (the
story's `source_ids`). Time-to-crawl: publication -> the first fetch of its source after it, for every article
published after the warm-up and at least 15 minutes before the end (one still unfetched at the end counts with the
time it has waited so far).

    python -m bench.crawl_priority [--sources 10000] [--hours 2] [--batch 200] [--stories 10] [--seed 7]

Progress goes to stderr; the last line of stdout is one JSON object of the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import insert, text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db import migrate
from app.db.engine import create_engine
from app.ingest.crawl_policy import Bounds, CrawlPolicy, CrawlState, after_success
from app.settings import Settings
from app.sources import repository
from app.sources.models import Source
from bench.figures import quantile
from bench.ingest import scratch_database

TICK_S = 15
PRIORITY_EVERY_S = 60
WARM_UP_S = 1800
TAIL_S = 900
VELOCITY_WINDOW_S = 1800
BREAKING_SOURCES = 5
STORY_SOURCES, STORY_LASTS_S, STORY_FIRST_S, STORY_EVERY_S = 30, 2700, 300, 360
START = datetime(2026, 11, 2, 12, tzinfo=UTC)
BOUNDS = Bounds(60, 900)
FEED_WINDOW = 20


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class Publishing:
    """What every source publishes (seconds since START, story id or -1), the same for both runs."""

    rates: list[float]
    articles: list[list[tuple[float, int]]]
    offsets: list[float]  # when each source is first due, within its first interval


def plan(sources: int, hours: float, stories: int, rng: random.Random) -> Publishing:
    end = hours * 3600
    rates = [rng.uniform(0.05, 2) if rng.random() < 0.7 else rng.uniform(2, 30) for _ in range(sources)]
    articles: list[list[tuple[float, int]]] = []
    for rate in rates:
        t, mine = -3600.0, []
        while (t := t + rng.expovariate(rate / 3600)) < end:
            mine.append((t, -1))
        articles.append(mine)
    for story in range(stories):
        start = rng.uniform(WARM_UP_S, end - STORY_LASTS_S - TAIL_S)
        for source in rng.sample(range(sources), STORY_SOURCES):
            t = start + rng.expovariate(1 / STORY_FIRST_S)
            while t < start + STORY_LASTS_S:
                articles[source].append((t, story))
                t += rng.expovariate(1 / STORY_EVERY_S)
    for mine in articles:
        mine.sort()
    return Publishing(rates, articles, [rng.uniform(0, BOUNDS.max_interval_s) for _ in range(sources)])


@dataclass
class Run:
    """One simulated crawl of the publishing, with or without priority."""

    publishing: Publishing
    ids: list[int]  # source index -> source id
    settings: Settings
    prioritized: bool
    cursor: list[int] = field(default_factory=list)  # per source: its first article not fetched yet
    states: list[CrawlState] = field(default_factory=list)
    fetched_on: dict[int, dict[int, float]] = field(default_factory=dict)  # story -> source -> last fetch of it
    delays: dict[str, list[float]] = field(default_factory=lambda: {"breaking": [], "quiet": []})
    index: dict[int, int] = field(default_factory=dict)  # source id -> source index
    fetches: int = 0
    raised: int = 0

    def __post_init__(self) -> None:
        self.cursor = [0] * len(self.ids)
        pairs = zip(self.publishing.rates, self.publishing.offsets, strict=True)
        self.states = [CrawlState(articles_per_hour=rate, last_fetched_at=START + timedelta(seconds=offset - 900))
                       for rate, offset in pairs]  # fmt: skip
        self.index = {source_id: i for i, source_id in enumerate(self.ids)}

    def fetch(self, i: int, t: float, end: float) -> datetime:
        """Source `i` fetched at `t`: its new articles' delays counted, the stories they cover told; when it is due
        next."""
        articles, start = self.publishing.articles[i], self.cursor[i]
        stop = start
        while stop < len(articles) and articles[stop][0] <= t:
            published, story = articles[stop]
            if WARM_UP_S <= published <= end - TAIL_S:
                self.delays["quiet" if story < 0 else "breaking"].append(t - published)
            if story >= 0:
                self.fetched_on.setdefault(story, {})[i] = t
            stop += 1
        self.cursor[i] = stop
        policy = CrawlPolicy.from_settings(self.settings)
        now = START + timedelta(seconds=t)
        new = [START + timedelta(seconds=p) for p, _ in articles[start:stop]]
        document = [START + timedelta(seconds=p) for p, _ in articles[max(stop - FEED_WINDOW, 0) : stop]]
        decision = after_success(self.states[i], BOUNDS, policy, now=now, new_published=new,
                                 document_published=document, publisher_delay_s=0, feed_url="",
                                 permanent_url=None)  # fmt: skip
        self.states[i] = decision.state
        self.fetches += 1
        return decision.next_crawl_at

    def unfetched(self, end: float) -> None:
        """Articles still waiting at the end count with how long they have waited so far (a lower bound), so a
        source left waiting weighs in rather than dropping out."""
        for i, articles in enumerate(self.publishing.articles):
            for published, story in articles[self.cursor[i] :]:
                if WARM_UP_S <= published <= end - TAIL_S:
                    self.delays["quiet" if story < 0 else "breaking"].append(end - published)

    def breaking_sources(self, t: float) -> set[int]:
        """The sources of stories breaking at `t`: 5+ of their sources' articles on it fetched in the window."""
        raised: set[int] = set()
        for fetched in self.fetched_on.values():
            recent = {i for i, at in fetched.items() if at >= t - VELOCITY_WINDOW_S}
            if len(recent) >= BREAKING_SOURCES:
                raised |= set(fetched)
        return {self.ids[i] for i in raised}


async def reset(engine: AsyncEngine, run: Run) -> None:
    """Every schedule row as the run starts: pending, no priority, first due within its first interval."""
    async with engine.begin() as connection:
        await connection.execute(text("""
            UPDATE crawl_schedule AS s
            SET status = 'pending', priority = 0, priority_at = NULL, next_crawl_at = u.due, last_fetched_at = u.at
            FROM unnest(CAST(:id AS bigint[]), CAST(:due AS timestamptz[]), CAST(:at AS timestamptz[]))
                AS u(id, due, at)
            WHERE s.source_id = u.id
        """), {"id": run.ids, "due": [START + timedelta(seconds=o) for o in run.publishing.offsets],
               "at": [state.last_fetched_at for state in run.states]})  # fmt: skip


async def simulate(engine: AsyncEngine, run: Run, hours: float, batch: int) -> dict[str, Any]:
    await reset(engine, run)
    end, half_life = hours * 3600, run.settings.crawl_priority_half_life_minutes * 60
    started = time.perf_counter()
    for tick in range(int(end // TICK_S)):
        t = tick * TICK_S
        now = START + timedelta(seconds=t)
        async with engine.begin() as connection:
            if run.prioritized and t % PRIORITY_EVERY_S == 0:
                run.raised += await repository.raise_priority(
                    connection, run.breaking_sources(t), priority=run.settings.crawl_priority_breaking, now=now,
                    half_life_s=half_life,
                )  # fmt: skip
            claimed = await repository.claim_due(
                connection,
                now=now,
                limit=batch,
                half_life_s=half_life,
                head_start_s=run.settings.crawl_priority_head_start_seconds,
            )
            due = [run.fetch(run.index[source_id], t, end) for source_id in claimed]
            await connection.execute(_FETCHED, {"id": claimed, "at": now, "next": due})
    run.unfetched(end)
    breaking, quiet = run.delays["breaking"], run.delays["quiet"]
    say(f"{'with' if run.prioritized else 'without'} priority: {run.fetches:,} fetches in "
        f"{time.perf_counter() - started:.1f} s")  # fmt: skip
    return {
        "breaking_median_s": round(statistics.median(breaking), 1), "breaking_p90_s": quantile(breaking, 0.9),
        "quiet_median_s": round(statistics.median(quiet), 1), "quiet_p90_s": quantile(quiet, 0.9),
        "breaking_articles": len(breaking), "quiet_articles": len(quiet), "fetches": run.fetches,
        "priority_raises": run.raised,
    }  # fmt: skip


_FETCHED = text("""
    UPDATE crawl_schedule AS s SET status = 'pending', last_fetched_at = :at, next_crawl_at = u.next
    FROM unnest(CAST(:id AS bigint[]), CAST(:next AS timestamptz[])) AS u(id, next)
    WHERE s.source_id = u.id
""")


async def add_sources(engine: AsyncEngine, n: int) -> list[int]:
    async with engine.begin() as connection:
        await connection.execute(insert(Source), [
            {"feed_url": f"https://news{i}.example/feed.xml", "name": f"Outlet {i}", "site_url": None,
             "category": None, "language": "en", "authority": 0.5, "min_interval_s": BOUNDS.min_interval_s,
             "max_interval_s": BOUNDS.max_interval_s} for i in range(n)
        ])  # fmt: skip
        await connection.execute(text("INSERT INTO crawl_schedule (source_id) SELECT id FROM sources"))
        return list(await connection.scalars(text("SELECT id FROM sources ORDER BY id")))


async def main(args: argparse.Namespace) -> dict[str, Any]:
    publishing = plan(args.sources, args.hours, args.stories, random.Random(args.seed))
    async with scratch_database() as url:
        settings = Settings(_env_file=None, database_url=url)  # type: ignore[call-arg]
        engine = create_engine(settings)
        try:
            await migrate.upgrade(engine)
            ids = await add_sources(engine, args.sources)
            runs = {}
            for prioritized in (False, True):
                run = Run(publishing, ids, settings, prioritized)
                runs["with_priority" if prioritized else "without_priority"] = await simulate(
                    engine, run, args.hours, args.batch
                )
        finally:
            await engine.dispose()
    with_, without = runs["with_priority"], runs["without_priority"]
    return {
        "sources": args.sources, "hours": args.hours, "claims_per_tick": args.batch, "tick_s": TICK_S,
        "stories": args.stories, "sources_per_story": STORY_SOURCES, **runs,
        "breaking_median_ratio": round(with_["breaking_median_s"] / without["breaking_median_s"], 3),
        "quiet_median_ratio": round(with_["quiet_median_s"] / without["quiet_median_s"], 3),
        "breaking_vs_quiet_median_with_priority": round(with_["breaking_median_s"] / with_["quiet_median_s"], 3),
    }  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sources", type=int, default=10_000)
    parser.add_argument("--hours", type=float, default=2)
    parser.add_argument("--batch", type=int, default=200, help="sources claimed per 15-s tick")
    parser.add_argument("--stories", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    print(json.dumps(asyncio.run(main(parser.parse_args()))))
