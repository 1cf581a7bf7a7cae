"""Which documents are trusted: the operations in the repository's `graphql/` folder, read once per process, and
those an administrator registered in PostgreSQL (the source of truth; nothing derived is kept elsewhere)."""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.documents.models import TrustedDocument

BUNDLED_DIR = Path(__file__).resolve().parents[2] / "graphql"  # beside app/ in a checkout and in the image


def sha256(text: str) -> str:
    # surrogatepass: a document with a lone surrogate (JSON can carry one) has a hash, which names nothing we keep
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@functools.cache
def bundled() -> dict[str, str]:
    """SHA-256 -> text of each `graphql/*.graphql` file, hashed as clients copy it (the whole file)."""
    texts = [path.read_text() for path in sorted(BUNDLED_DIR.glob("*.graphql"))]
    return {sha256(text): text for text in texts}


async def trusted_body(session: AsyncSession, digest: str) -> str | None:
    """The text of the trusted document with this SHA-256, or None."""
    if (text := bundled().get(digest)) is not None:
        return text
    return await session.scalar(select(TrustedDocument.body).where(TrustedDocument.sha256 == digest))


@dataclass(frozen=True)
class Operation:
    name: str | None
    body: str


def operations_in(path: Path) -> list[Operation]:
    """A `.graphql` file is one document; a `.json` file is an Apollo persisted query manifest
    (`{"operations": [{"name", "body"}, ...]}`, as `generate-persisted-query-manifest` writes it)."""
    text = path.read_text()
    if path.suffix != ".json":
        return [Operation(path.stem, text)]
    manifest = json.loads(text)
    return [Operation(entry.get("name"), entry["body"]) for entry in manifest["operations"]]


async def register(session: AsyncSession, operations: list[Operation]) -> list[str]:
    """Trusts these documents (registering one again changes nothing); their SHA-256s, in order."""
    digests = [sha256(op.body) for op in operations]
    rows = [{"sha256": d, "body": op.body, "name": op.name} for d, op in zip(digests, operations, strict=True)]
    if rows:
        await session.execute(insert(TrustedDocument).values(rows).on_conflict_do_nothing())
    return digests


async def registered(session: AsyncSession) -> list[TrustedDocument]:
    return list(await session.scalars(select(TrustedDocument).order_by(TrustedDocument.registered_at)))
