"""What a running `newsagg up` leaves in NEWSAGG_HOME so the other `newsagg` commands use its servers: the URLs of the
embedded PostgreSQL and Redis it started (servers.json, written once it has migrated, removed when it stops)."""

from __future__ import annotations

import json
from pathlib import Path

SERVERS_FILE = "servers.json"


class RunningElsewhere(RuntimeError):
    """A `newsagg up` holds the home, and its servers cannot be used from here."""


def write_servers(home: Path, urls: dict[str, str]) -> None:
    written = home / f"{SERVERS_FILE}.new"
    written.write_text(json.dumps(urls))
    written.chmod(0o600)
    written.replace(home / SERVERS_FILE)  # whole: a reader never sees half a file


def clear_servers(home: Path) -> None:
    (home / SERVERS_FILE).unlink(missing_ok=True)


def running_database_url(home: Path) -> str | None:
    """The DATABASE_URL of the `newsagg up` holding `home`; None while it has not written it (starting)."""
    try:
        urls: dict[str, str] = json.loads((home / SERVERS_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return None
    if "DATABASE_URL" not in urls:
        raise RunningElsewhere(
            f"the `newsagg up` running on {home} uses a DATABASE_URL of its own: set the same one for this command"
        )
    return urls["DATABASE_URL"]


def running_redis_url(home: Path) -> str | None:
    """The REDIS_URL of the embedded Redis of the `newsagg up` holding `home`; None when there is none."""
    try:
        urls: dict[str, str] = json.loads((home / SERVERS_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return None
    return urls.get("REDIS_URL")
