"""A reader with 5,000 stories due gets one digest of bounded size: the urgent and newest stories listed, the others
counted in an "and N more" line, every entry settled (listed ones delivered, the rest covered), none sent again."""

from __future__ import annotations

import re

from app.notifications.digest import send_digests
from app.services import Services
from app.settings import Settings
from tests.alerts import add_digest_entries, add_reader, count
from tests.mailboxes import Mailbox, mail_settings, parts, smtp_server

STORIES = 5000
MORE = re.compile(r"\.\.\. and ([\d,]+) more, left out")


def _listed(body: str) -> list[str]:
    return [line for line in body.splitlines() if line.startswith("- ")]


async def _one_digest(services: Services, settings: Settings, **limits: int) -> tuple[str, int]:
    """The body and size of the one email a run sends; the run after it sends nothing."""
    mailbox = Mailbox()
    with smtp_server(mailbox) as port:
        mail = mail_settings(settings, port, **limits)
        assert await send_digests(services.engine, mail) == 1
        assert await send_digests(services.engine, mail) == 0  # nothing left to send again
    [(recipients, message, size)] = mailbox.messages
    assert recipients == ["swamped@example.com"]
    assert message["Subject"] == f"newsagg: {STORIES} stories for you"
    return parts(message)[0], size


async def _settled(services: Services, listed: int) -> None:
    statuses = "SELECT count(*) FROM deliveries WHERE status = :s"
    assert await count(services, statuses, s="delivered") == listed
    assert await count(services, statuses, s="covered") == STORIES - listed
    assert await count(services, "SELECT count(*) FROM deliveries WHERE delivered_at IS NULL") == 0


async def test_five_thousand_stories_make_one_digest_of_the_top_fifty(services: Services, settings: Settings) -> None:
    reader = await add_reader(services, "swamped@example.com", digest="daily")
    await add_digest_entries(services, [reader], STORIES)
    body, size = await _one_digest(services, settings)
    listed = _listed(body)
    # the 50 urgent stories (every 100th), newest first; then 4,950 counted
    assert [line.split(" (")[0] for line in listed] == [f"- Story {n}" for n in range(100, STORIES + 1, 100)]
    assert MORE.findall(body) == ["4,950"]
    assert size <= settings.digest_max_bytes
    await _settled(services, 50)
    print(f"\ndigest of {STORIES:,} stories: 50 listed, {size:,} bytes (cap {settings.digest_max_bytes:,})")


async def test_long_foreign_titles_are_cut_to_the_byte_cap_and_the_rest_counted(services: Services,
                                                                               settings: Settings) -> None:  # fmt: skip
    cap = 8192
    reader = await add_reader(services, "swamped@example.com", digest="hourly")
    await add_digest_entries(services, [reader], STORIES, title="Землетрясение 東京 " * 40)  # ~1.3 KB a title
    body, size = await _one_digest(services, settings, digest_max_bytes=cap)
    listed = _listed(body)
    assert 0 < len(listed) < 50  # the cap, not the count, stops the list
    assert size <= cap
    assert MORE.findall(body) == [f"{STORIES - len(listed):,}"]
    await _settled(services, len(listed))
    print(f"\ndigest of {STORIES:,} long foreign titles: {len(listed)} listed, {size:,} bytes (cap {cap:,})")
