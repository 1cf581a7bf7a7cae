"""Keyword search at a million articles: latency of `Search.search` on PostgreSQL, and index lag under ingest.

A scratch database (the real migrations) gets `--articles` articles (default 1,000,000): every real item of the
feeds data (`gesab001_headlines_items.jsonl.gz`: titles, summaries, publication dates shifted by one constant so the
newest is today; the feeds are English) and generated ones to reach the count. Generated English titles and summaries
come from word-bigram chains over the real ones; French, German, Spanish, Italian and Portuguese ones (a sixth) and a
few Chinese and Japanese ones from small news vocabularies. 300 sources, published over 60 days (denser lately),
topics, and 40% of the articles in story clusters whose articles share words, so grouping by story matters. The load
is COPY (asyncpg) with the secondary indexes dropped and built again after; the outbox events the COPYs wrote go
through the index sync before anything is measured (on PostgreSQL it stamps them and learns their title words), and
the text-search index over the last days' articles is built, as the worker does when it starts.

Then, in one run:

- searches: ~400 queries drawn from the real data (common and rare words, two-word names, quoted phrases,
  `-exclusions`, `or`, misspelled words corrected from title words, accented words, CJK), each without and with
  filters (topics, languages, 1/7/30 days, sources, one per story, newest first), first pages of 20 (limit 21, as
  the API asks) and some second pages, through `Search.search` (PostgreSQL: no Meilisearch URL), after one unmeasured
  pass; p50/p95/p99/max overall, by class and by filter, the slowest searches;
- baseline: one article by primary key through the same session factory after each search; the ratio of p95s;
- index lag: a writer inserts 100 articles every 0.1 s (the ingest statement) for `--seconds`, the index sync runs
  every 5 s as the worker does, its status is sampled every second, and marked articles are timed from commit to
  being returned by a search. With MEILI_URL set, again against Meilisearch (the corpus reindexed into an index of
  its own, dropped at the end).

    python -m bench.search [--articles 1000000] [--data PATH] [--seconds 60] [--probes 50] [--seed 7] [--keep]

Progress goes to stderr; the last line of stdout is one JSON object of the figures. `--keep` leaves the database
for inspection (its name is printed) instead of dropping it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import email.utils
import gzip
import itertools
import json
import math
import os
import random
import re
import sys
import time
import unicodedata
import uuid
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
from redis.asyncio import Redis
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from app.articles import repository as articles
from app.articles.fingerprints import content_hash
from app.articles.models import Article
from app.db import migrate
from app.db.engine import create_engine, session_factory
from app.ingest.text import html_to_text
from app.search.query import SearchQuery, SearchRejected, SearchResult
from app.search.recent import keep_recent_index
from app.search.service import Search
from app.search.sync import reindex, status, sync_pending
from app.settings import Settings
from app.topics.keywords import TOPICS, keyword_probabilities
from bench.figures import quantile
from bench.ingest import scratch_database

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "feeds"
ITEMS = "gesab001_headlines_items.jsonl.gz"
REDIS_URL = os.environ.get("NEWSAGG_BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
GOAL_P95_MS, GOAL_LAG_S = 50, 60
PAGE = 20
DAYS = 60  # generated articles are published over this many days, denser lately
CLUSTERED = 0.4  # share of the articles in story clusters
CHUNK = 20_000  # articles per COPY
SYNC_EVERY = 5.0  # seconds between index sync runs, as the worker schedules them
WRITER_BATCH, WRITER_EVERY = 100, 0.1
SOURCES = 300

# language -> share of the generated articles, sources of that language
LANGUAGES = {"en": (0.83, 230), "fr": (0.04, 16), "de": (0.04, 14), "es": (0.04, 14), "it": (0.02, 8),
             "pt": (0.015, 6), "zh": (0.01, 6), "ja": (0.005, 6)}  # fmt: skip
TOPIC_WEIGHTS = {"world": 20, "politics": 15, "business": 15, "technology": 10, "science": 5, "health": 10,
                 "sports": 15, "entertainment": 10}  # fmt: skip

# content words, then glue words, of the non-English generated articles
_VOCABULARY = {
    "fr": ("élection président gouvernement économie santé réforme grève marché ministre européenne sécurité énergie "
           "hôpital école député médecins vaccin Paris Macron Lyon Marseille coupe football cinéma festival "
           "entreprise chômage prix hausse baisse accord crise climat sommet tempête incendie procès tribunal police "
           "manifestation retraites budget impôts banque inflation Assemblée Sénat élèves université été",
           "le la les de des du et à pour sur après contre dans avec"),
    "de": ("Bundesregierung Wahl Kanzler Wirtschaft Gesundheit Krankenhäuser Öl Preise Streik Fußball Bundesliga "
           "Gericht München Berlin Hamburg Klimaschutz Energiewende Flüchtlinge Schüler Universität Börse "
           "Unternehmen Arbeitslosigkeit Rückgang Anstieg Gespräche Gipfel Sturm Überschwemmung Brand Polizei "
           "Bundestag Haushalt Steuern Renten Impfstoff Ärzte Verkehr Bahn Wohnungen Mieten Grüne Koalition",
           "der die das und in im für nach gegen mit vor über"),
    "es": ("elección gobierno economía salud política presidente España Madrid Barcelona México fútbol liga huelga "
           "mercado inflación acuerdo crisis clima cumbre tormenta incendio juicio tribunal policía protesta médicos "
           "vacuna energía educación campaña votación Congreso pensiones impuestos banco vivienda alquiler sequía",
           "el la los las de del y en para tras contra con por"),
    "it": ("elezioni governo economia sanità presidente Roma Milano Napoli calcio campionato sciopero mercato "
           "inflazione accordo crisi clima vertice tempesta incendio processo tribunale polizia protesta medici "
           "vaccino energia scuola città caffè pensioni tasse banca",
           "il la le di del della e in per dopo contro con"),
    "pt": ("eleição governo economia saúde presidente Lisboa Brasil futebol campeonato greve mercado inflação acordo "
           "crise clima cimeira tempestade incêndio julgamento tribunal polícia protesto médicos vacina energia "
           "educação pensões impostos banco habitação",
           "o a os as de do da e em para após contra com"),
    "zh": ("经济 政府 北京 上海 疫情 疫苗 选举 总统 股市 增长 贸易 科技 公司 足球 比赛 电影 天气 台风 "
           "地震 医院 学生 大学 能源 气候 会议 外交 美国 中国 日本 香港 人工智能 芯片 房价 银行",
           "的 在 和 将 对"),
    "ja": ("東京 政府 首相 選挙 経済 地震 台風 株価 円安 感染 野球 映画 大阪 発表 会議 "
           "大学 病院 鉄道 気候 賃上げ 半導体",
           "の が で を に は"),
}  # fmt: skip
VOCABULARY = {lang: (content.split(), glue.split()) for lang, (content, glue) in _VOCABULARY.items()}
CJK = ("zh", "ja")
_STOPWORDS = (
    "the a an of to in on for and or is are was were be been with as at by from after over into says say said new "
    "how why what who when where his her its their our your my he she they we you it this that these those not no "
    "but more than up out about will can could would should may might has have had do does did get gets got just "
    "all one two three first last year years day days week time man woman people amid against off back down before "
    "under while than then there here him them us i me so if via per also still some any only now"
)
STOPWORDS = frozenset(_STOPWORDS.split())
_LETTERS = re.compile(r"[^\W\d_]+")
QUERY_CLASSES = {"common": 60, "rare": 60, "entity": 50, "phrase": 50, "exclusion": 40, "or": 40, "typo": 50,
                 "accented": 30, "cjk": 20}  # fmt: skip
ARTICLE_COLUMNS = ("source_id", "external_id", "url", "title", "summary", "published_at", "crawled_at",
                   "content_hash", "language", "topics", "cluster_id")  # fmt: skip


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --- the corpus ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Item:
    feed: str
    title: str
    summary: str
    link: str | None
    guid: str | None
    published: float  # epoch seconds


def _when(raw: dict[str, Any]) -> float | None:
    for value in (raw.get("published"), raw.get("first_seen")):
        if not value:
            continue
        with contextlib.suppress(TypeError, ValueError, IndexError):
            if re.fullmatch(r"\d{8}T\d{6}Z", value):
                parsed = datetime.strptime(value, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
            elif value[:1].isdigit():
                parsed = datetime.fromisoformat(value)
            else:
                parsed = email.utils.parsedate_to_datetime(value)
            return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()
    return None


def read_items(path: Path) -> list[Item]:
    """The real feed items as ingest would store them (HTML to text, cut to the usual lengths)."""
    items: list[Item] = []
    seen: set[tuple[str, str]] = set()
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            raw = json.loads(line)
            title = html_to_text(raw.get("title") or "", 500)
            published = _when(raw)
            keys = {
                key for key in (("link", raw.get("link")), (raw["feed"], raw.get("guid") or raw.get("link"))) if key[1]
            }
            if title and published is not None and not keys & seen:  # URLs and (source, id) are unique
                seen |= keys
                items.append(Item(raw["feed"], title, html_to_text(raw.get("summary") or "", 1000), raw.get("link"),
                                  raw.get("guid"), published))  # fmt: skip
    return items


class Chain:
    """A word-bigram chain over real texts: new text with the real texts' vocabulary, word frequencies and turns."""

    END = ""

    def __init__(self, texts: Sequence[str]) -> None:
        follow: dict[str, list[str]] = defaultdict(list)
        self.starts: list[str] = []
        for body in texts:
            words = body.split()
            if len(words) < 3:
                continue
            self.starts.append(words[0])
            for a, b in itertools.pairwise(words):
                follow[a].append(b)
            follow[words[-1]].append(self.END)
        self.follow = dict(follow)

    def make(self, rng: random.Random, low: int, high: int, first: str | None = None) -> list[str]:
        words = [first or rng.choice(self.starts)]
        target = rng.randint(low, high)
        while len(words) < target:
            after = rng.choice(self.follow.get(words[-1]) or (self.END,))
            if after == self.END:
                if len(words) >= low:
                    break
                after = rng.choice(self.starts)
            words.append(after)
        return words

    def go_on(self, rng: random.Random, words: list[str], more: int) -> list[str]:
        """`words` continued by up to `more` words."""
        out = list(words)
        for _ in range(more):
            after = rng.choice(self.follow.get(out[-1]) or (self.END,))
            if after == self.END:
                break
            out.append(after)
        return out


@dataclass(frozen=True, slots=True)
class Cluster:
    language: str
    topics: tuple[str, ...]
    title: list[str]
    summary: list[str]


@dataclass(slots=True)
class Corpus:
    """What the load writes: sources, story clusters, and one plan row per article in publication order."""

    sources: list[tuple[str, str]]  # (name, language)
    clusters: list[Cluster]
    plan: list[tuple[float, int, int, int, tuple[str, ...]]]  # (published, source, cluster or -1, item or -1, topics)
    items: list[Item]
    title_chain: Chain
    summary_chain: Chain


def _topics(rng: random.Random) -> tuple[str, ...]:
    names, weights = list(TOPIC_WEIGHTS), list(TOPIC_WEIGHTS.values())
    first = rng.choices(names, weights)[0]
    second = rng.choices(names, weights)[0] if rng.random() < 0.2 else first
    return (first,) if second == first else (first, second)


def _age_seconds(rng: random.Random) -> float:
    """Truncated exponential over DAYS (time constant DAYS/2): seven times denser today than DAYS ago."""
    tau = DAYS / 2
    return -tau * math.log(1 - rng.random() * (1 - math.exp(-DAYS / tau))) * 86400


def _foreign(rng: random.Random, language: str, low: int, high: int) -> list[str]:
    content, glue = VOCABULARY[language]
    words: list[str] = []
    for n in range(rng.randint(low, high)):
        words.append(rng.choice(content))
        if n and language not in CJK and rng.random() < 0.4:
            words.insert(-1, rng.choice(glue))
        elif language in CJK and rng.random() < 0.3:
            words.append(rng.choice(glue))
    return words


def plan_corpus(items: list[Item], articles: int, rng: random.Random) -> Corpus:
    """Every real item (a random half of `articles` when there are fewer than twice as many) and generated ones."""
    if len(items) * 2 > articles:
        items = rng.sample(items, articles // 2)
    now = datetime.now(UTC)
    shift = now.timestamp() - 3600 - max(item.published for item in items)
    items = [replace(item, published=item.published + shift) for item in items]
    feeds = sorted({item.feed for item in items})
    sources = [(feed, "en") for feed in feeds]
    for language, (_, count) in LANGUAGES.items():
        sources += [
            (f"{language} outlet {n}", language) for n in range(count - (len(feeds) if language == "en" else 0))
        ]
    sources = sources[:SOURCES]
    by_language: dict[str, list[int]] = defaultdict(list)
    for index, (_, language) in enumerate(sources):
        by_language[language].append(index)
    popularity = {lang: [1 / (rank + 1) ** 0.8 for rank in range(len(ids))] for lang, ids in by_language.items()}

    def source_of(language: str) -> int:
        return rng.choices(by_language[language], popularity[language])[0]

    title_chain = Chain([item.title for item in items])
    summary_chain = Chain([item.summary for item in items])
    probabilities = keyword_probabilities([(item.title, item.summary) for item in items])
    feed_source = {feed: n for n, feed in enumerate(feeds)}
    plan: list[tuple[float, int, int, int, tuple[str, ...]]] = []
    for n, (item, row) in enumerate(zip(items, probabilities, strict=True)):
        topics = (TOPICS[int(row.argmax())],) if row.max() > 0.3 else _topics(rng)
        plan.append((item.published, feed_source[item.feed], -1, n, topics))
    generated = articles - len(items)
    languages, shares = list(LANGUAGES), [share for share, _ in LANGUAGES.values()]
    clusters: list[Cluster] = []
    clustered, wanted = 0, min(generated, int(CLUSTERED * articles))
    while clustered < wanted:
        size = min(max(2, int(rng.paretovariate(1.2) * 2)), 80, wanted - clustered + 1)
        language = rng.choices(languages, shares)[0]
        if language in VOCABULARY:
            title, summary = _foreign(rng, language, 4, 8), _foreign(rng, language, 10, 24)
        else:
            title, summary = title_chain.make(rng, 7, 14), summary_chain.make(rng, 14, 36)
        clusters.append(Cluster(language, _topics(rng), title, summary))
        start = now.timestamp() - _age_seconds(rng)
        for _ in range(size):
            published = min(start + rng.expovariate(1 / (6 * 3600)), now.timestamp() - 60)
            plan.append((published, source_of(language), len(clusters) - 1, -1, clusters[-1].topics))
        clustered += size
    for _ in range(articles - len(plan)):
        language = rng.choices(languages, shares)[0]
        plan.append((now.timestamp() - _age_seconds(rng), source_of(language), -1, -1, _topics(rng)))
    plan.sort()
    return Corpus(sources, clusters, plan, items, title_chain, summary_chain)


def _variant(rng: random.Random, words: list[str], chain: Chain | None) -> list[str]:
    """Another article of the same story: most of its words, in order, and a few of its own."""
    if chain is None:
        kept = [w for w in words if rng.random() < 0.75] or words[:2]
        return kept + [rng.choice(words)] * rng.randint(0, 1)
    length = max(3, int(len(words) * rng.uniform(0.6, 1.0)))
    start = rng.randint(0, len(words) - min(length, len(words)))
    return chain.go_on(rng, words[start : start + length], rng.randint(0, 4))


def _join(language: str, words: list[str]) -> str:
    if language in CJK:
        return "".join(words)
    joined = " ".join(words)
    return joined[:1].upper() + joined[1:]


def article_records(corpus: Corpus, source_ids: list[int], cluster_ids: list[int], start: int,
                    seed: int) -> list[tuple[Any, ...]]:  # fmt: skip
    """The COPY records of plan rows [start, start + CHUNK)."""
    rng = random.Random(seed)
    records = []
    for n, (published, source, cluster, item_index, topics) in enumerate(corpus.plan[start : start + CHUNK], start):
        language = corpus.sources[source][1]
        if item_index >= 0:
            item = corpus.items[item_index]
            title, summary = item.title, item.summary
            external, url = item.guid or item.link or f"item-{n}", item.link
        else:
            if cluster >= 0:
                story = corpus.clusters[cluster]
                english = story.language not in VOCABULARY
                title_words = _variant(rng, story.title, corpus.title_chain if english else None)
                summary_words = _variant(rng, story.summary, corpus.summary_chain if english else None)
            elif language in VOCABULARY:
                title_words, summary_words = _foreign(rng, language, 4, 8), _foreign(rng, language, 10, 24)
            else:
                title_words = corpus.title_chain.make(rng, 6, 14)
                summary_words = corpus.summary_chain.make(rng, 12, 40)
            title, summary = _join(language, title_words), _join(language, summary_words)
            external, url = f"g{n}", f"https://bench.example/{source}/{n}"
        when = datetime.fromtimestamp(published, UTC)
        records.append((source_ids[source], external, url, title, summary, when,
                        when + timedelta(seconds=rng.randint(30, 900)), content_hash(title, summary), language,
                        list(topics), cluster_ids[cluster] if cluster >= 0 else None))  # fmt: skip
    return records


# --- the load -----------------------------------------------------------------------------------------------------

_INSERT_SOURCES = """
    INSERT INTO sources (feed_url, name, kind, language, authority, min_interval_s, max_interval_s, status)
    SELECT 'https://bench.example/feeds/' || u.n, u.name, 'rss', u.language, u.authority, 60, 900, 'active'
    FROM unnest($1::text[], $2::text[], $3::float8[]) WITH ORDINALITY AS u(name, language, authority, n)
    RETURNING id, feed_url
"""
_CONSTRAINTS = """
    SELECT conname, pg_get_constraintdef(oid) AS definition, contype FROM pg_constraint
    WHERE conrelid = 'articles'::regclass AND contype IN ('u', 'f') ORDER BY contype DESC, conname
"""
_INDEXES = """
    SELECT c.relname, pg_get_indexdef(i.indexrelid) AS definition
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
    WHERE i.indrelid = 'articles'::regclass AND NOT i.indisprimary
      AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid AND k.conrelid = i.indrelid)
"""
_REPRESENTATIVES = """
    UPDATE story_clusters s SET representative_article_id = r.id
    FROM (SELECT DISTINCT ON (cluster_id) cluster_id, id FROM articles WHERE cluster_id IS NOT NULL
          ORDER BY cluster_id, published_at, id) r
    WHERE s.id = r.cluster_id
"""
_INDEX_SIZES = """
    SELECT indexrelid::regclass::text AS name, pg_relation_size(indexrelid) AS size
    FROM pg_index WHERE indrelid = 'articles'::regclass ORDER BY 1
"""
SLOW_INDEXES = ("ix_articles_search",)  # built first: the long one


def _cluster_rows(corpus: Corpus, source_ids: list[int]) -> list[tuple[Any, ...]]:
    spans: dict[int, list[float]] = {}
    outlets: dict[int, set[int]] = defaultdict(set)
    sizes: Counter[int] = Counter()
    for published, source, cluster, _, _ in corpus.plan:
        if cluster >= 0:
            span = spans.setdefault(cluster, [published, published])
            span[0], span[1] = min(span[0], published), max(span[1], published)
            outlets[cluster].add(source_ids[source])
            sizes[cluster] += 1
    rows = []
    for n, story in enumerate(corpus.clusters):
        first, last = (datetime.fromtimestamp(t, UTC) for t in spans[n])
        rows.append((n + 1, _join(story.language, story.title), story.topics[0], list(story.topics),
                     json.dumps(dict.fromkeys(story.topics, sizes[n])), [story.language], sorted(outlets[n]), sizes[n],
                     len(outlets[n]), first, last))  # fmt: skip
    return rows


async def _build(connection: asyncpg.Connection, statements: asyncio.Queue[tuple[str, str]],
                 took: dict[str, float]) -> None:  # fmt: skip
    await connection.execute("SET maintenance_work_mem = '2GB'")
    while not statements.empty():
        name, statement = statements.get_nowait()
        started = time.perf_counter()
        await connection.execute(statement)
        took[name] = round(time.perf_counter() - started, 2)
        say(f"  {name}: {took[name]} s")


async def load(url: str, corpus: Corpus, seed: int) -> dict[str, Any]:
    """Sources, story clusters and articles by COPY, secondary indexes dropped first and built after; VACUUM
    ANALYZE. Returns the timings."""
    dsn = url.replace("postgresql+asyncpg://", "postgresql://")
    connections = [await asyncpg.connect(dsn) for _ in range(2)]  # one COPY (and one index build) per core
    first = connections[0]
    try:
        started = time.perf_counter()
        names, languages = [name for name, _ in corpus.sources], [lang for _, lang in corpus.sources]
        rows = await first.fetch(_INSERT_SOURCES, names, languages, [0.3 + 0.7 * random.Random(n).random()
                                                                     for n in range(len(names))])  # fmt: skip
        by_url = {row["feed_url"]: row["id"] for row in rows}
        source_ids = [by_url[f"https://bench.example/feeds/{n + 1}"] for n in range(len(names))]
        await first.copy_records_to_table("story_clusters", records=_cluster_rows(corpus, source_ids), columns=(
            "id", "title", "primary_topic", "topics", "topic_counts", "languages", "source_ids", "article_count",
            "source_count", "first_seen_at", "last_updated_at"))  # fmt: skip
        await first.execute("SELECT setval('story_clusters_id_seq', greatest((SELECT max(id) FROM story_clusters), 1))")
        cluster_ids = list(range(1, len(corpus.clusters) + 1))
        constraints = await first.fetch(_CONSTRAINTS)
        indexes = await first.fetch(_INDEXES)
        for row in constraints:
            await first.execute(f'ALTER TABLE articles DROP CONSTRAINT "{row["conname"]}"')
        for row in indexes:
            await first.execute(f'DROP INDEX "{row["relname"]}"')
        say(f"dropped {len(indexes)} indexes and {len(constraints)} constraints of articles; copying "
            f"{len(corpus.plan):,} articles")  # fmt: skip
        for connection in connections:
            await connection.execute("SET synchronous_commit = off")
        chunks: asyncio.Queue[list[tuple[Any, ...]] | None] = asyncio.Queue(maxsize=4)
        copied = 0

        async def produce() -> None:
            for k, start in enumerate(range(0, len(corpus.plan), CHUNK)):
                await chunks.put(await asyncio.to_thread(article_records, corpus, source_ids, cluster_ids, start,
                                                         seed * 1_000_003 + k))  # fmt: skip
            for _ in connections:
                await chunks.put(None)

        async def consume(connection: asyncpg.Connection) -> None:
            nonlocal copied
            while (records := await chunks.get()) is not None:
                await connection.copy_records_to_table("articles", records=records, columns=ARTICLE_COLUMNS)
                copied += len(records)
                if copied % (10 * CHUNK) < CHUNK:
                    say(f"  {copied:,} articles, {time.perf_counter() - started:.0f} s")

        await asyncio.gather(produce(), *(consume(c) for c in connections))
        copy_seconds = time.perf_counter() - started

        started = time.perf_counter()
        statements: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        for row in sorted(indexes, key=lambda r: r["relname"] not in SLOW_INDEXES):
            statements.put_nowait((row["relname"], row["definition"]))
        took: dict[str, float] = {}
        await asyncio.gather(*(_build(c, statements, took) for c in connections))
        for row in constraints:  # unique ones first (contype u sorts after f, DESC), foreign keys validated after
            statements.put_nowait((row["conname"], f'ALTER TABLE articles ADD CONSTRAINT "{row["conname"]}" '
                                                   f'{row["definition"]}'))  # fmt: skip
        await _build(first, statements, took)
        index_seconds = time.perf_counter() - started

        started = time.perf_counter()
        await first.execute(_REPRESENTATIVES)
        await first.execute("VACUUM ANALYZE articles")
        await first.execute("VACUUM ANALYZE story_clusters, sources")
        vacuum_seconds = time.perf_counter() - started
        heap, max_id = await first.fetchrow("SELECT pg_relation_size('articles'), (SELECT max(id) FROM articles)")
        index_sizes = await first.fetch(_INDEX_SIZES)
    finally:
        for connection in connections:
            await connection.close()
    mb = 1024 * 1024
    return {
        "load_seconds": round(copy_seconds, 1),
        "index_build_seconds": round(index_seconds, 1),
        "index_build_seconds_each": took,
        "vacuum_analyze_seconds": round(vacuum_seconds, 1),
        "articles_heap_mb": round(heap / mb),
        "articles_index_mb": {row["name"]: round(row["size"] / mb, 1) for row in index_sizes},
        "story_clusters": len(corpus.clusters),
        "sources": len(corpus.sources),
        "real_items": len(corpus.items),
        "max_id": max_id,
    }


async def deliver_loader_events(engine: AsyncEngine, settings: Settings) -> dict[str, Any]:
    """The outbox events of the COPYs (one per statement) through the index sync, as the worker would take them (on
    PostgreSQL: stamped delivered, and the title words of the articles learnt for typo correction); then ANALYZE."""
    started = time.perf_counter()
    events = 0
    while (await status(engine, None)).pending_events:
        synced = await sync_pending(engine, None, settings)
        if not synced:
            raise RuntimeError("the index sync delivered nothing of the load's events")
        events += synced
    async with engine.connect() as connection:
        await connection.execution_options(isolation_level="AUTOCOMMIT")
        await connection.execute(text("ANALYZE"))
    return {"loader_events_synced": events, "loader_sync_seconds": round(time.perf_counter() - started, 1)}


# --- the queries --------------------------------------------------------------------------------------------------


def _fold(word: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


def query_mix(items: list[Item], rng: random.Random) -> list[tuple[str, str]]:
    """(class, query) drawn from the real titles, QUERY_CLASSES of each class."""
    counts: Counter[str] = Counter()
    names: Counter[str] = Counter()  # two capitalised words in a row
    phrases: Counter[str] = Counter()  # two lower-case words in a row
    title_words = []
    for item in items:
        tokens = _LETTERS.findall(item.title)
        lower = [t.lower() for t in tokens]
        title_words.append(set(lower))
        counts.update(set(lower))
        for (a, b), (la, lb) in zip(itertools.pairwise(tokens), itertools.pairwise(lower), strict=True):
            if la in STOPWORDS or lb in STOPWORDS or len(a) < 2 or len(b) < 2:
                continue
            if a[0].isupper() and b[0].isupper():
                names[f"{a} {b}"] += 1
            elif a.islower() and b.islower():
                phrases[f"{la} {lb}"] += 1
    vocabulary = set(counts)
    for item in items:
        vocabulary.update(w.lower() for w in _LETTERS.findall(item.summary))
    for content, _ in VOCABULARY.values():
        vocabulary.update(_fold(w.lower()) for w in content)
    common = [w for w, _ in counts.most_common() if w not in STOPWORDS and len(w) >= 4][:150]
    rare = sorted(w for w, c in counts.items() if 2 <= c <= 3 and len(w) >= 5 and w not in STOPWORDS)
    entity = [p for p, c in names.most_common(200) if c >= 10]
    phrase = [p for p, c in phrases.most_common(300) if c >= 10]

    def sample(pool: Sequence[str], k: int) -> list[str]:
        return rng.sample(list(pool), min(k, len(pool)))

    def excluded(word: str) -> str:
        near: Counter[str] = Counter()
        for words in title_words:
            if word in words:
                near.update(w for w in words if w != word and w not in STOPWORDS and len(w) >= 4)
        return rng.choice([w for w, _ in near.most_common(10)])

    def misspelled(word: str) -> str | None:
        for _ in range(10):
            i = rng.randint(1, len(word) - 3)
            typo = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
            if typo not in vocabulary:
                return typo
        return None

    spelled = [w for w, c in counts.items() if c >= 20 and len(w) >= 6 and w.isascii() and w not in STOPWORDS]
    typos = [t for w in sample(spelled, 3 * QUERY_CLASSES["typo"]) if (t := misspelled(w))]
    accented = [w.lower() for lang, (content, _) in VOCABULARY.items() if lang not in CJK for w in content
                if not w.isascii()]  # fmt: skip
    cjk = [w for lang in CJK for w in VOCABULARY[lang][0]]
    mix = {
        "common": sample(common, QUERY_CLASSES["common"]),
        "rare": sample(rare, QUERY_CLASSES["rare"]),
        "entity": sample(entity, QUERY_CLASSES["entity"]),
        "phrase": [f'"{p}"' for p in sample(phrase, QUERY_CLASSES["phrase"])],
        "exclusion": [f"{w} -{excluded(w)}" for w in sample(common, QUERY_CLASSES["exclusion"])],
        "or": [f"{a} or {b}" for a, b in (sample(common, 2) for _ in range(QUERY_CLASSES["or"]))],
        "typo": typos[: QUERY_CLASSES["typo"]],
        "accented": [w if n % 2 else _fold(w) for n, w in enumerate(sample(accented, QUERY_CLASSES["accented"]))],
        "cjk": sample(cjk, QUERY_CLASSES["cjk"]),
    }
    return [(kind, query) for kind, queries in mix.items() for query in queries]


FILTER_KINDS = ("topics", "languages", "since", "sources", "by_story", "newest_first")
FILTER_LANGUAGES = (("en",), ("en",), ("en",), ("fr",), ("de", "en"), ("es",), ("ja", "zh"))


@dataclass(frozen=True, slots=True)
class Spec:
    """One search as a reader would send it: the query, its filters (a label for the report), a second page or not."""

    kind: str
    text: str
    filters: dict[str, Any]
    days: int | None  # `since` this many days before the search
    label: str  # "" without filters
    second_page: bool

    def query(self, now: datetime) -> SearchQuery:
        since = now - timedelta(days=self.days) if self.days else None
        return SearchQuery(self.text, since=since, **self.filters)


def specs(queries: list[tuple[str, str]], source_ids: list[int], rng: random.Random) -> list[Spec]:
    """Each query without filters and with a random few of them; a quarter of each ask for a second page too."""
    out = []
    for kind, query in queries:
        out.append(Spec(kind, query, {}, None, "", rng.random() < 0.25))
        filters: dict[str, Any] = {}
        days = None
        labels = []
        for name in sorted(rng.sample(FILTER_KINDS, rng.choice((1, 1, 2, 2, 3)))):
            if name == "topics":
                filters["topics"] = tuple(rng.sample(TOPICS, rng.choice((1, 1, 2))))
            elif name == "languages":
                filters["languages"] = rng.choice(FILTER_LANGUAGES)
            elif name == "since":
                days = rng.choice((1, 7, 30))
            elif name == "sources":
                filters["source_ids"] = tuple(rng.sample(source_ids, rng.randint(1, 5)))
            else:
                filters[name] = True
            labels.append(f"since{days}d" if name == "since" else name)
        out.append(Spec(kind, query, filters, days, "+".join(labels), rng.random() < 0.25))
    rng.shuffle(out)
    return out


@dataclass(frozen=True, slots=True)
class Timed:
    spec: Spec
    offset: int
    ms: float
    hits: int
    approximate: bool


async def search_rounds(search: Search, sessions: Any, plan: list[Spec], max_id: int, rng: random.Random,
                        ) -> tuple[list[Timed], list[float], int]:  # fmt: skip
    """Every search of the plan (its second page right after the first, as a reader pages), each followed by one
    article by primary key (the baseline); the timings, the baseline's, and the searches refused."""
    timed: list[Timed] = []
    lookups: list[float] = []
    rejected = 0
    for spec in plan:
        query = spec.query(datetime.now(UTC))
        for offset in (0, PAGE) if spec.second_page else (0,):
            now = datetime.now(UTC)
            started = time.perf_counter()
            try:
                result: SearchResult = await search.search(query, now=now, limit=PAGE + 1, offset=offset)
            except SearchRejected:
                rejected += 1
                break
            timed.append(Timed(spec, offset, (time.perf_counter() - started) * 1000, len(result.hits),
                               result.approximate))  # fmt: skip
            if len(result.hits) <= PAGE:
                break  # no next page to ask for
            if result.corrected:  # the words the API's cursor carries to the next page
                query = replace(query, text=result.corrected)
        started = time.perf_counter()
        async with sessions() as session:
            await session.get(Article, rng.randint(1, max_id))
        lookups.append((time.perf_counter() - started) * 1000)
    return timed, lookups, rejected


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    return {"n": len(values), "p50": quantile(values, 0.5), "p95": quantile(values, 0.95),
            "p99": quantile(values, 0.99), "max": round(max(values), 2)}  # fmt: skip


def by_class(timed: list[Timed], kind: str) -> dict[str, Any]:
    """A class's latencies, and how many of its first pages were empty or found by corrected words."""
    mine = [t for t in timed if t.spec.kind == kind]
    firsts = [t for t in mine if not t.offset]
    return {**percentiles([t.ms for t in mine]), "empty": sum(not t.hits for t in firsts),
            "approximate": sum(t.approximate for t in firsts)}  # fmt: skip


def search_figures(timed: list[Timed], lookups: list[float], rejected: int) -> dict[str, Any]:
    every = [t.ms for t in timed]
    overall, pk = percentiles(every), percentiles(lookups)
    by_filter: dict[str, list[float]] = defaultdict(list)
    for t in timed:
        for label in t.spec.label.split("+") if t.spec.label else ():
            by_filter[label].append(t.ms)
    slowest = [{"query": t.spec.text, "class": t.spec.kind, "filters": t.spec.label, "offset": t.offset,
                "hits": t.hits, "ms": round(t.ms, 1)} for t in sorted(timed, key=lambda t: -t.ms)[:5]]  # fmt: skip
    return {
        "searches": len(timed),
        "rejected": rejected,
        **{f"search_{k}_ms": v for k, v in overall.items() if k != "n"},
        "no_filters": percentiles([t.ms for t in timed if not t.spec.label]),
        "with_filters": percentiles([t.ms for t in timed if t.spec.label]),
        "second_pages": percentiles([t.ms for t in timed if t.offset]),
        "by_class": {kind: by_class(timed, kind) for kind in QUERY_CLASSES},
        "by_filter": {label: percentiles(values) for label, values in sorted(by_filter.items())},
        "approximate_pages": sum(t.approximate for t in timed),
        "empty_first_pages": sum(1 for t in timed if not t.offset and not t.hits),
        "slowest": slowest,
        "pk_lookup_p50_ms": pk.get("p50"),
        "pk_lookup_p95_ms": pk.get("p95"),
        "ratio_search_p50_to_pk_lookup_p50": round(overall["p50"] / pk["p50"], 1),
        "ratio_search_p95_to_pk_lookup_p95": round(overall["p95"] / pk["p95"], 1),
    }


# --- index lag under ingest ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LagRun:
    engine: AsyncEngine
    settings: Settings
    search: Search
    source_ids: list[int]
    seconds: float
    probes: int
    tag: str  # external ids of this run's articles start with it


async def index_lag(run: LagRun, corpus: Corpus, rng: random.Random) -> dict[str, Any]:
    """A writer inserting WRITER_BATCH articles every WRITER_EVERY s (ingest's statement), the index sync every
    SYNC_EVERY s, its status every second, and `probes` marked articles timed from commit to being found."""
    pool = [(_join("en", corpus.title_chain.make(rng, 6, 14)), _join("en", corpus.summary_chain.make(rng, 12, 40)))
            for _ in range(2000)]  # fmt: skip
    stop = asyncio.Event()
    lags: list[float] = []
    pending: list[int] = []
    found_ms: list[float] = []
    written = missed = fallbacks = 0
    serial = itertools.count()

    def new_article(title: str, summary: str) -> articles.NewArticle:
        n = next(serial)
        return articles.NewArticle(source_id=rng.choice(run.source_ids), external_id=f"{run.tag}-{n}",
                                   url=f"https://bench.example/{run.tag}/{n}", title=title, summary=summary,
                                   author=None, published_at=datetime.now(UTC),
                                   content_hash=content_hash(title, summary))  # fmt: skip

    async def writer() -> None:
        nonlocal written
        due = time.perf_counter()
        while not stop.is_set():
            batch = [new_article(*rng.choice(pool)) for _ in range(WRITER_BATCH)]
            async with run.engine.begin() as connection:
                written += len(await articles.insert_new(connection, batch))
            due += WRITER_EVERY
            await asyncio.sleep(max(0.0, due - time.perf_counter()))

    async def syncer() -> None:
        while True:
            await sync_pending(run.engine, run.search.meili, run.settings)
            if stop.is_set():
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), SYNC_EVERY)

    async def sampler() -> None:
        while not stop.is_set():
            now = await status(run.engine, run.search.meili)
            lags.append(now.lag_seconds)
            pending.append(now.pending_events)
            await asyncio.sleep(1)

    async def prober(start: float) -> None:
        nonlocal missed, fallbacks
        for k in range(run.probes):
            await asyncio.sleep(max(0.0, start + k * run.seconds / run.probes - time.perf_counter()))
            token = "zq" + "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=10))
            title, summary = rng.choice(pool)
            async with run.engine.begin() as connection:
                inserted = await articles.insert_new(connection, [new_article(f"{title} {token}", summary)])
            committed = time.perf_counter()
            while True:
                result = await run.search.search(SearchQuery(token), now=datetime.now(UTC), limit=PAGE + 1, offset=0)
                fallbacks += result.backend != run.search.backend
                if result.backend == run.search.backend and any(h.article_id == inserted[0].id for h in result.hits):
                    found_ms.append((time.perf_counter() - committed) * 1000)
                    break
                if time.perf_counter() - committed > 3 * GOAL_LAG_S:
                    missed += 1
                    break
                await asyncio.sleep(0.05)

    start = time.perf_counter()
    background = [asyncio.create_task(job()) for job in (writer, syncer, sampler)]
    try:
        await prober(start)
        await asyncio.sleep(max(0.0, start + run.seconds - time.perf_counter()))
    finally:
        stop.set()
        await asyncio.gather(*background)
    elapsed = time.perf_counter() - start
    left = await status(run.engine, run.search.meili)
    return {
        "ingest_seconds": round(elapsed, 1),
        "ingest_articles": written,
        "ingest_articles_per_second": round(written / elapsed, 1),
        "lag_max_s": round(max(lags), 2),
        "lag_p95_s": quantile(lags, 0.95),
        "pending_events_max": max(pending),
        "pending_events_after": left.pending_events,
        "searchable_p50_ms": quantile(found_ms, 0.5) if found_ms else None,
        "searchable_p95_ms": quantile(found_ms, 0.95) if found_ms else None,
        "searchable_max_ms": round(max(found_ms), 1) if found_ms else None,
        "probes": run.probes,
        "probes_missed": missed,
        "probe_fallbacks": fallbacks,
    }


# --- the run ------------------------------------------------------------------------------------------------------


async def main(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    items = read_items(args.data / ITEMS)
    corpus = plan_corpus(items, args.articles, rng)
    queries = query_mix(corpus.items, rng)
    say(f"{len(corpus.items):,} real items, {len(corpus.plan) - len(corpus.items):,} generated, "
        f"{len(corpus.clusters):,} stories; {len(queries)} queries")  # fmt: skip
    redis = Redis.from_url(REDIS_URL)
    await redis.flushdb()
    try:
        async with scratch_database(keep=args.keep) as url:
            engine = create_async_engine(url)
            await migrate.upgrade(engine)
            await engine.dispose()
            loaded = await load(url, corpus, args.seed)
            say(f"loaded in {loaded['load_seconds']} s, indexes in {loaded['index_build_seconds']} s, vacuum analyze "
                f"{loaded['vacuum_analyze_seconds']} s")  # fmt: skip
            settings = Settings(_env_file=None, database_url=url, meili_url=None)  # type: ignore[call-arg]
            engine = create_engine(settings)  # the API's engine and session factory
            started = time.perf_counter()
            await keep_recent_index(engine, datetime.now(UTC))  # as the worker does when it starts
            loaded["recent_index_seconds"] = round(time.perf_counter() - started, 1)
            say(f"the last days' text-search index in {loaded['recent_index_seconds']} s")
            sessions = session_factory(engine)
            search = Search(settings, sessions, redis)
            async with engine.connect() as connection:
                source_ids = list(await connection.scalars(text("SELECT id FROM sources ORDER BY id")))
            try:
                loaded.update(await deliver_loader_events(engine, settings))
                say(f"the load's outbox events through the index sync in {loaded['loader_sync_seconds']} s")
                async with engine.connect() as connection:  # as autovacuum does after a bulk insert
                    await connection.execution_options(isolation_level="AUTOCOMMIT")
                    await connection.execute(text("VACUUM ANALYZE search_terms"))
                plan = specs(queries, source_ids, rng)
                say(f"warm-up: {len(plan)} searches")
                await search_rounds(search, sessions, plan, loaded["max_id"], rng)
                say("measuring")
                searched = search_figures(*await search_rounds(search, sessions, plan, loaded["max_id"], rng))
                say(f"search p50 {searched['search_p50_ms']} ms, p95 {searched['search_p95_ms']} ms; index lag under "
                    f"ingest for {args.seconds} s")  # fmt: skip
                lag = await index_lag(LagRun(engine, settings, search, source_ids, args.seconds, args.probes,
                                             "lag-postgres"), corpus, rng)  # fmt: skip
                meili = await meili_lag(args, url, engine, sessions, redis, source_ids, corpus, rng)
            finally:
                await engine.dispose()
    finally:
        await redis.flushdb()
        await redis.aclose()
    lag_worst = max(lag["lag_max_s"], (lag["searchable_p95_ms"] or math.inf) / 1000)
    return {
        "articles": len(corpus.plan),
        "queries": len(queries),
        **{k: v for k, v in loaded.items() if k != "max_id"},
        **searched,
        **{f"postgres_{k}": v for k, v in lag.items()},
        **meili,
        "goal_p95_ms": GOAL_P95_MS,
        "goal_lag_s": GOAL_LAG_S,
        "p95_within_goal": searched["search_p95_ms"] <= GOAL_P95_MS,
        "lag_within_goal": lag_worst <= GOAL_LAG_S,
        **({"database": url.rsplit("/", 1)[1]} if args.keep else {}),
    }


async def meili_lag(args: argparse.Namespace, url: str, engine: AsyncEngine, sessions: Any, redis: Redis,
                    source_ids: list[int], corpus: Corpus, rng: random.Random) -> dict[str, Any]:  # fmt: skip
    """With MEILI_URL set: the corpus reindexed into an index of its own, then the lag run against it; dropped."""
    if not os.environ.get("MEILI_URL"):
        return {}
    index = f"bench_search_{uuid.uuid4().hex[:8]}"
    settings = Settings(_env_file=None, database_url=url, meili_index=index)  # type: ignore[call-arg]
    search = Search(settings, sessions, redis)
    assert search.meili is not None
    try:
        say(f"Meilisearch: reindexing {len(corpus.plan):,} articles into {settings.meili_index}")
        started = time.perf_counter()
        await reindex(engine, search.meili, since=None, batch=settings.search_sync_batch)
        reindexed = round(time.perf_counter() - started, 1)
        lag = await index_lag(LagRun(engine, settings, search, source_ids, args.seconds, args.probes,
                                     "lag-meili"), corpus, rng)  # fmt: skip
    finally:
        await search.meili.drop()
    return {"meili_reindex_seconds": reindexed, **{f"meili_{k}": v for k, v in lag.items()}}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--articles", type=int, default=1_000_000)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"the folder holding {ITEMS}")
    parser.add_argument("--seconds", type=float, default=60, help="how long the writer runs in the index lag part")
    parser.add_argument("--probes", type=int, default=50, help="marked articles timed from commit to found")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the database (its name is printed) to inspect it")
    arguments = parser.parse_args()
    if not (arguments.data / ITEMS).exists():
        raise SystemExit(f"no feed items at {arguments.data / ITEMS} (pass --data: the shared data's feeds folder)")
    print(json.dumps(asyncio.run(main(arguments))))
