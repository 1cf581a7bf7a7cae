"""Article pages made by code: a news page with its boilerplate (navigation, related links, footer, comments) around
the article, for the extraction tests."""

from __future__ import annotations

from html import escape

BOILERPLATE_WORDS = ("Subscribe", "Newsletter", "Cookie", "Related")


def paragraphs(n: int, topic: str = "harbour") -> list[str]:
    return [
        f"Paragraph {k} of the report on the {topic}: the council met on Tuesday and voted to rebuild the old "
        f"{topic} wall, which storms damaged twice last winter, at a cost the mayor called reasonable."
        for k in range(n)
    ]


def article_page(
    title: str = "Council votes to rebuild the harbour wall",
    body: list[str] | None = None,
    *,
    author: str = "Ada Lovelace",
    published: str = "2026-11-20T08:30:00+00:00",
    image: str = "https://cdn.example.org/harbour.jpg",
    lang: str = "en",
    extra_body_html: str = "",
) -> bytes:
    body = paragraphs(8) if body is None else body
    article = "".join(f"<p>{escape(p)}</p>" for p in body)
    return f"""<!doctype html><html lang="{lang}"><head><meta charset="utf-8">
<title>{escape(title)} | Daily Test</title><meta name="author" content="{escape(author)}">
<meta property="og:image" content="{escape(image)}">
<meta property="article:published_time" content="{published}"><meta property="og:title" content="{escape(title)}">
</head><body>
<header><nav><a href="/">Home</a> <a href="/world">World</a> <a href="/sport">Sport</a> Subscribe</nav></header>
<div class="cookie-banner">Cookie settings: we use cookies to improve your experience.</div>
<main><article><h1>{escape(title)}</h1><p class="byline">By {escape(author)}</p>{article}{extra_body_html}</article>
<aside class="related"><h3>Related</h3><ul><li><a href="/a">Related story one</a></li>
<li><a href="/b">Related story two</a></li></ul></aside></main>
<footer>Newsletter: sign up for the morning briefing. Copyright 2026 Daily Test. Terms. Privacy.</footer>
</body></html>""".encode()
