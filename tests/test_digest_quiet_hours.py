"""Quiet hours apply to digests as they do to webhooks: a digest due while the reader's quiet hours (minutes of the
day in their IANA time zone) cover now waits, uncharged, for the end of them; a reader whose quiet hours do not cover
now gets theirs at once. Asia/Kolkata is UTC+05:30, a half-hour offset: quiet hours around the UTC clock's time are
not quiet there."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from sqlalchemy import text

from app.notifications.digest import send_digests
from app.services import Services
from app.settings import Settings
from tests.alerts import add_digest_entries, add_reader
from tests.mailboxes import Mailbox, mail_settings, smtp_server

KOLKATA = ZoneInfo("Asia/Kolkata")


def _minute(at: datetime) -> int:
    return at.hour * 60 + at.minute


def _around(at: datetime) -> dict[str, int]:
    """Quiet hours from half an hour before `at`'s clock time to an hour after."""
    return {"quiet_start": (_minute(at) - 30) % 1440, "quiet_end": (_minute(at) + 60) % 1440}


def _next_local(local: datetime, minute: int) -> datetime:
    """The next moment after `local` its clock shows `minute` past midnight, in UTC."""
    at = local.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(minutes=minute)
    return (at if at > local else at + timedelta(days=1)).astimezone(UTC)


async def test_a_digest_due_in_the_readers_quiet_hours_waits_for_their_end(services: Services,
                                                                           settings: Settings) -> None:  # fmt: skip
    now = datetime.now(UTC)
    in_kolkata = now.astimezone(KOLKATA)
    hushed_hours = _around(in_kolkata)  # covers now in Kolkata
    hushed = await add_reader(services, "hushed@example.com", digest="hourly", time_zone="Asia/Kolkata",
                              **hushed_hours)  # fmt: skip
    # quiet at this hour of the UTC clock: 5.5 hours away from now in Kolkata
    awake = await add_reader(services, "awake@example.com", digest="hourly", time_zone="Asia/Kolkata", **_around(now))
    await add_digest_entries(services, [hushed, awake], 3)
    mailbox = Mailbox()
    with smtp_server(mailbox) as port:
        mail = mail_settings(settings, port)
        # when the digests are due
        assert await send_digests(services.engine, mail) == 1
        # then the reader whose quiet hours cover now in their time zone gets none yet, uncharged, due at their end
        assert mailbox.recipients() == ["awake@example.com"]
        async with services.engine.connect() as connection:
            rows = (await connection.execute(text("SELECT status, attempts, next_attempt_at FROM deliveries "
                                                  "WHERE user_id = :u"), {"u": hushed})).all()  # fmt: skip
        ends = _next_local(in_kolkata, hushed_hours["quiet_end"])
        assert {(row.status, row.attempts, row.next_attempt_at) for row in rows} == {("pending", 0, ends)}
        assert await send_digests(services.engine, mail) == 0  # a run during the quiet hours sends nothing more
        # when the quiet hours are over
        async with services.engine.begin() as connection:
            await connection.execute(text("UPDATE deliveries SET next_attempt_at = now() WHERE user_id = :u"),
                                     {"u": hushed})  # fmt: skip
            later = _around(in_kolkata + timedelta(hours=3))
            await connection.execute(text("UPDATE alert_rules SET quiet_start = :quiet_start, quiet_end = :quiet_end "
                                          "WHERE user_id = :u"), {"u": hushed, **later})  # fmt: skip
        # then their digest goes, all three stories in one email
        assert await send_digests(services.engine, mail) == 1
    assert mailbox.recipients() == ["awake@example.com", "hushed@example.com"]
    assert mailbox.messages[-1][1]["Subject"] == "newsagg: 3 stories for you"
