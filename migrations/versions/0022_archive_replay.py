"""Sources whose feed URLs are one in normal form merged into the older (0020 had left such pairs as they were)

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-26
"""

import logging
from collections.abc import Sequence

from alembic import op
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.util import await_only

from app.articles.renormalize import renormalize_feed_urls

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None
log = logging.getLogger(__name__)


def upgrade() -> None:
    # as 0020: the merge (async, as all newsagg SQL is) awaits through the async engine's run_sync
    bind = op.get_bind()
    rewritten, merged = await_only(renormalize_feed_urls(AsyncConnection(AsyncEngine(bind.engine), bind)))
    for survivor, other in merged:
        log.warning("source %d merged into source %d: their feed URLs are one in normal form", other, survivor)
    log.info("source feed URLs normalized again: %d rewritten, %d sources merged", rewritten, len(merged))


def downgrade() -> None:
    """Merged sources are not split again."""
