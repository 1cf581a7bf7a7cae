"""Article URLs normalized again (RFC 3986 by url-normalize, query parameters by name); those that become one merged

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-26
"""

import logging
from collections.abc import Sequence

from alembic import op
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.util import await_only

from app.articles.renormalize import renormalize_article_urls

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None
log = logging.getLogger(__name__)


def upgrade() -> None:
    # migrations run inside the async engine's run_sync: the merge (async, as all newsagg SQL is) awaits through it
    bind = op.get_bind()
    done = await_only(renormalize_article_urls(AsyncConnection(AsyncEngine(bind.engine), bind)))
    log.info("article URLs normalized again: %d rewritten, %d merged into an older article, %d stories repaired; "
             "%d source feed URLs rewritten", done.rewritten, done.merged, done.stories, done.sources)  # fmt: skip
    for survivor, merged in done.sources_merged:
        log.warning("source %d merged into source %d: their feed URLs are one in normal form", merged, survivor)


def downgrade() -> None:
    """The URLs stay as they are: the older rules read them as well, and merged articles are not split again."""
