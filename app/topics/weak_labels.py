"""Weak labels: the topic a publisher gave an article, read from the section in its URL (/sport/, /business/,
/us/politics/, /tvshowbiz/ ...). This is how the shipped model was trained: on real feed items labelled by their
publishers' sections, with no hand-labelled or licence-restricted data. Sections that say nothing about a topic
(/news/, /opinion/, /lifestyle/ ...) are left out.

    newsagg topics train --items ITEMS.jsonl[.gz] --out model.npz
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

AMBIGUOUS = "sciencetech"  # one publisher's section for both science and technology: the model decides which

_DROP_SEG = re.compile(r"^(\d[\d-]*|story|article|articles|index\.html?|live-news|article-\d+.*)$")


def section_of(link: str | None) -> str:
    """Publisher section of a link: 'sport/afl', 'us/politics', 'news/business' ('' if none)."""
    if not link:
        return ""
    u = urlparse(link)
    if "youtube.com" in u.netloc:
        return ""
    segs = [s for s in u.path.split("/") if s]
    if not u.path.endswith("/") and segs:
        last = segs.pop()  # slug / file name
        if last.startswith("index.") and segs:
            segs.pop()  # cnn: /2020/05/01/us/<slug>/index.html
        if "bbc." in u.netloc:  # /news/business-52350082 -> news/business
            stem = re.sub(r"-?\d+$", "", last)
            if stem:
                segs.append(stem)
    segs = [s.lower() for s in segs if not _DROP_SEG.match(s.lower()) and s.count("-") < 4]
    if "cnn." in u.netloc and segs[:1] == ["videos"]:
        segs = segs[1:2]
    return "/".join(segs[:3])


# first matching rule wins; None = ambiguous section, item dropped
SECTION_RULES: list[tuple[str, str | None]] = [
    (r"/health-and-wellness/", "health"),
    (
        r"/(opinion|opinions|debate|columnists|briefing|podcasts?|programmes|in-pictures|explainers|stories|newsbeat"
        r"|blogs-the-papers|collections|please-explain|magazine|insider|upshot|reader-center|obituaries|travel|style"
        r"|femail|lifestyle|life-style|food|food-drink|dining|great-big-story|fashion|beauty|design|at-home|parenting"
        r"|smarter-living|education|faith-values|great-outdoors|weather|news-story|auto|cars|driven|motoring)/",
        None,
    ),
    (r"/media/", None),  # fox/cnn "media": cable-news punditry
    (r"/sciencetech/", AMBIGUOUS),  # science or technology: resolved by a first model
    (r"/(sport|sports|afl|nrl|football|cricket|tennis|golf|rugby|rugby-union|formula1|boxing)/", "sports"),
    (
        r"/(business|money|investing|markets|the-economy|economy|banking-and-finance|companies|small-business|workplace"
        r"|personal-finance|your-money|realestate|real-estate|property|oneroof|employment|jobs|manpower|dealbook"
        r"|super-and-retirement|saving|borrowing)/",
        "business",
    ),
    (r"/(technology|tech|personaltech|video-games|media-technology)/", "technology"),
    (r"/(science|science-environment|climate|climate-change|environment|conservation|sustainability)/", "science"),
    (r"/(health|healthcare|covid-19)/", "health"),
    (r"/(politics|political|uk-politics|elections|election-us-2020|federal|budget-2020)/", "politics"),
    (
        r"/(entertainment|entertainment-arts|tvshowbiz|arts|culture|movies|music|books|theater|theatre|television"
        r"|tv-and-radio|celebrity|celebrities|spy|stuff-to-watch|tv|musicals|opera|comedy|dance)/",
        "entertainment",
    ),
    (
        r"/(world(-[a-z-]+)?|world-nation|africa|europe|middleeast|asia|americas|australia|international"
        r"|pacific-news|se-asia)/",
        "world",
    ),
]
_RULES = [(re.compile(p), t) for p, t in SECTION_RULES]


def weak_label(item: dict[str, Any]) -> str | None:
    link = item.get("link") or ""
    if "cnn." in link and "/videos/tv/" in link:
        return None  # show clips, not entertainment
    s = "/" + section_of(link) + "/"
    for rx, topic in _RULES:
        if rx.search(s):
            return topic
    return None


def item_text(item: dict[str, Any]) -> tuple[str, str]:
    summary = re.sub(r"<[^>]+>", " ", item.get("summary") or "")
    summary = re.sub(r"^\s*\w+ \d\d?, \d{4} \d\d?:\d\d [AP]M\s+", "", summary)  # straitstimes date prefix
    return item.get("title") or "", summary


def _lines(path: Path) -> Iterator[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        yield from handle


def load_weakly_labelled(path: Path) -> list[tuple[str, str, str]]:
    """(title, summary, topic) for feed items (JSON lines: feed, title, summary, link) whose section names a
    topic; one per distinct title."""
    seen, out = set(), []
    for line in _lines(path):
        item = json.loads(line)
        label = weak_label(item)
        if label is None:
            continue
        title, summary = item_text(item)
        key = re.sub(r"\W+", " ", title.lower()).strip()
        if key and key not in seen:
            seen.add(key)
            out.append((title, summary, label))
    return out
