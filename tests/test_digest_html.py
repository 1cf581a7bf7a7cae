"""A digest is multipart/alternative: the plain text as before, and HTML whose titles are escaped (a `<script>` and
an `&` in a title are text, not markup), in any script (Russian, Chinese, Arabic), each linked to its story; its
Message-ID follows the same rule (a digest of the reader and the entries it covers)."""

from __future__ import annotations

from html.parser import HTMLParser

from sqlalchemy import text

from app.notifications.digest import send_digests
from app.notifications.digest_email import message_id
from app.services import Services
from app.settings import Settings
from tests.alerts import add_reader
from tests.mailboxes import Mailbox, mail_settings, parts, smtp_server
from tests.newsroom import StorySpec, add_source, add_story

TITLES = {
    1: '<script>alert("x")</script> Markets & "Banks" rally',
    2: "Землетрясение в Москве",
    3: "北京发生地震",
    4: "زلزال يضرب القاهرة",
}


class Links(HTMLParser):
    """The HTML's tags, and each link's target and text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.links: list[tuple[str, str]] = []
        self._href: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "a":
            self._href = dict(attrs)["href"]
            self.links.append((self._href or "", ""))

    def handle_endtag(self, tag: str) -> None:
        self._href = None if tag == "a" else self._href

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            href, seen = self.links[-1]
            self.links[-1] = (href, seen + data)


async def _entries(services: Services, user_id: int, titles: dict[int, str]) -> list[int]:
    """One digest entry per story (id: title), due now (story n broke n minutes ago); their delivery ids."""
    async with services.engine.begin() as connection:
        return list(await connection.scalars(text("""
            INSERT INTO deliveries (idempotency_key, user_id, event_id, channel, priority, next_attempt_at, payload,
                                    event_at)
            SELECT g || '/' || CAST(:u AS bigint) || '/email', :u, g, 'email', 'batch', now(), jsonb_build_object(
                       'story_id', g, 'title', t, 'source_count', 6, 'at', now()::text, 'priority', 'normal'),
                   now() - g * interval '1 minute'
            FROM unnest(CAST(:ids AS bigint[]), CAST(:titles AS text[])) AS s(g, t)
            RETURNING id"""), {"u": user_id, "ids": list(titles), "titles": list(titles.values())}))  # fmt: skip


async def test_a_digest_has_an_html_part_with_escaped_titles_linked_to_their_stories(
    services: Services, settings: Settings
) -> None:
    reader = await add_reader(services, "reader@example.com", digest="daily")
    ids = await _entries(services, reader, TITLES)
    mailbox = Mailbox()
    with smtp_server(mailbox) as port:
        mail = mail_settings(settings, port, share_story_url="https://news.example/stories/{story_id}")
        assert await send_digests(services.engine, mail) == 1
    [(_, message, _)] = mailbox.messages
    plain, rich = parts(message)
    assert message["Message-ID"] == message_id(mail, reader, ids)
    # the plain text names every title as it is, newest first
    assert [line.split(" (")[0] for line in plain.splitlines() if line.startswith("- ")] == [
        f"- {TITLES[n]}" for n in sorted(TITLES)
    ]
    # the HTML escapes them (no markup of a title's comes through) and links each to its story
    page = Links()
    page.feed(rich)
    assert "script" not in page.tags
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; Markets &amp; &quot;Banks&quot; rally" in rich
    assert page.links == [(f"https://news.example/stories/{n}", TITLES[n]) for n in sorted(TITLES)]
    assert rich.count('<li dir="auto">') == len(TITLES)  # right-to-left titles laid out as such


async def test_a_digest_links_a_story_to_its_lead_article_unless_a_story_page_is_configured(
    services: Services, settings: Settings
) -> None:
    reader = await add_reader(services, "reader@example.com", digest="daily")
    outlet = await add_source(services, settings, "outlet")
    story, [lead] = await add_story(services, StorySpec("Quake", [outlet]))
    async with services.engine.begin() as connection:
        await connection.execute(text("UPDATE articles SET url = 'https://a.example/quake?a=1&b=2' WHERE id = :a"),
                                 {"a": lead})  # fmt: skip
    await _entries(services, reader, {story: TITLES[2], story + 1000: TITLES[3]})  # the second story is gone
    mailbox = Mailbox()
    with smtp_server(mailbox) as port:
        assert await send_digests(services.engine, mail_settings(settings, port)) == 1
    rich = parts(mailbox.messages[0][1])[1]
    page = Links()
    page.feed(rich)
    assert page.links == [("https://a.example/quake?a=1&b=2", TITLES[2])]  # the story gone is listed unlinked
    assert 'href="https://a.example/quake?a=1&amp;b=2"' in rich
    assert TITLES[3] in rich
