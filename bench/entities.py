"""Named-entity extraction speed on real feed items, against the work every article already gets in the same run.

Each of `--items` feed items (title and summary, from `../shared/data/feeds`, or `$NEWSAGG_SHARED_DATA/feeds`) is
read by the entity extractor (uncached) and, as the baseline, by the story clusterer's term extraction
(`app/stories/text_features.terms`), which clustering already runs on every article. Prints headlines/s of each and
their ratio.

    python -m bench.entities [--items 20000] [--path ITEMS.jsonl.gz]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import time
from collections.abc import Callable
from itertools import islice
from pathlib import Path
from typing import Any

from app.entities.extractor import extract, extract_uncached
from app.stories.text_features import terms

SHARED = Path(os.environ.get("NEWSAGG_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
DEFAULT_ITEMS = SHARED / "feeds" / "gesab001_headlines_items.jsonl.gz"


def rate(read: Callable[[str, str, str | None], Any], items: list[tuple[str, str]]) -> float:
    started = time.perf_counter()
    for title, summary in items:
        read(title, summary, "en")
    return len(items) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=20000)
    parser.add_argument("--path", type=Path, default=DEFAULT_ITEMS)
    args = parser.parse_args()
    with gzip.open(args.path, "rt") as lines:
        items = [(row["title"], row.get("summary") or "") for row in map(json.loads, islice(lines, args.items))]
    extract("Warm Up", "the gazetteer loads once per process")
    entities, baseline = rate(extract_uncached, items), rate(terms, items)
    found = sum(len(extract_uncached(t, s, "en")) for t, s in items[:2000])
    print(json.dumps({"items": len(items), "entities_per_item": round(found / min(len(items), 2000), 2),
                      "headlines_per_second": round(entities), "terms_headlines_per_second": round(baseline),
                      "ratio_entities_to_terms_time": round(baseline / entities, 2)}))  # fmt: skip


if __name__ == "__main__":
    main()
