"""`newsagg eval extraction`: article text extraction measured on the article extraction benchmark's pages
(`html/<id>.html.gz` and `ground-truth.json`, scrapinghub/article-extraction-benchmark) with its metric
(app/extraction/metric.py); `--compare` runs readability-lxml (the `eval` extra) on the same pages beside it."""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Callable
from pathlib import Path

from app.extraction.extractor import extract_article
from app.extraction.metric import Counts, scores, shingle_matching

Extractor = Callable[[bytes, str | None], str]


def shipped(page: bytes, url: str | None) -> str:
    found = extract_article(page, url)
    return found.text if found else ""


def readability_lxml(page: bytes, url: str | None) -> str:
    import lxml.html  # type: ignore[import-untyped]
    from readability import Document  # type: ignore[import-untyped]  # the eval extra

    summary = Document(page.decode("utf-8", "replace"), url=url).summary(html_partial=True)
    return str(lxml.html.fromstring(summary).text_content()) if summary.strip() else ""


def read_pages(folder: Path) -> list[tuple[str, bytes, str | None, str]]:
    """(id, page bytes, URL, true article body) of each page of the benchmark's folder."""
    truth = json.loads((folder / "ground-truth.json").read_text(encoding="utf-8"))
    return [(key, gzip.decompress((folder / "html" / f"{key}.html.gz").read_bytes()), item.get("url"),
             item.get("articleBody", "")) for key, item in sorted(truth.items())]  # fmt: skip


def measure(pages: list[tuple[str, bytes, str | None, str]], extractor: Extractor) -> dict[str, object]:
    extractor(pages[0][1], pages[0][2])  # warm up: imports and models load once per process
    counts: list[Counts] = []
    empty: list[str] = []
    elapsed = 0.0
    for key, page, url, body in pages:
        started = time.perf_counter()
        text = extractor(page, url)
        elapsed += time.perf_counter() - started
        if not text.strip():
            empty.append(key)
        counts.append(shingle_matching(body, text))
    return {**{k: round(v, 4) for k, v in scores(counts).items()}, "empty_pages": len(empty), "empty": empty,
            "ms_per_page": round(1000 * elapsed / len(pages), 1)}  # fmt: skip


def evaluate(folder: Path, *, compare: bool = False) -> dict[str, object]:
    pages = read_pages(folder)
    result: dict[str, object] = {"pages": len(pages), "trafilatura": measure(pages, shipped)}
    if compare:
        result["readability_lxml"] = measure(pages, readability_lxml)
    return result
