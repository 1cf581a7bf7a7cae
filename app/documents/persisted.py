"""Automatic persisted queries, Apollo's protocol: a request may carry `extensions.persistedQuery {version: 1,
sha256Hash}`. With the document's text too, the hash is checked and the text kept in Redis; with the hash alone,
the kept text runs, or PERSISTED_QUERY_NOT_FOUND asks the client to send it. In trusted-documents-only mode only
trusted documents (app/documents/trusted.py) run, whatever Redis holds."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import RedisError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.documents.trusted import sha256, trusted_body
from app.settings import Settings

log = logging.getLogger(__name__)
KEY_PREFIX = "newsagg:apq:"
HEX64 = re.compile(r"[0-9a-f]{64}")


class DocumentRefused(Exception):
    """A request's document cannot run; `code` is the error's `extensions.code` (Apollo's where Apollo has one)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Resolved:
    query: str
    keep: str | None = None  # a checked hash whose text goes to Redis once the document proves valid


def requested_hash(extensions: Any) -> str | None:
    """The SHA-256 a request names in `extensions.persistedQuery`, None when it names none."""
    if not isinstance(extensions, dict) or extensions.get("persistedQuery") is None:
        return None
    asked = extensions["persistedQuery"]
    if not isinstance(asked, dict) or asked.get("version") != 1:
        raise DocumentRefused("PERSISTED_QUERY_INVALID", "unsupported persisted query version (1 is supported)")
    digest = asked.get("sha256Hash")
    if not isinstance(digest, str) or not HEX64.fullmatch(digest):
        raise DocumentRefused("PERSISTED_QUERY_INVALID", "sha256Hash must be 64 lowercase hexadecimal digits")
    return digest


class PersistedQueries:
    def __init__(self, redis: Redis, sessions: async_sessionmaker[AsyncSession], settings: Settings) -> None:
        self.redis, self.sessions, self.settings = redis, sessions, settings

    async def resolve(self, query: str | None, extensions: Any) -> Resolved | None:
        """The document to run instead of `query`, or None to run `query` as sent."""
        digest = requested_hash(extensions)
        if query is not None and digest is not None and sha256(query) != digest:
            raise DocumentRefused("PERSISTED_QUERY_HASH_MISMATCH", "provided sha does not match query")
        if self.settings.trusted_documents_only:
            return await self._trusted(query, digest)
        if digest is None:
            return None
        if not self.settings.persisted_queries:
            if query is None:
                raise DocumentRefused("PERSISTED_QUERY_NOT_SUPPORTED", "PersistedQueryNotSupported")
            return None
        if query is not None:
            fits = len(query.encode("utf-8", "surrogatepass")) <= self.settings.persisted_query_max_bytes
            return Resolved(query, keep=digest if fits else None)
        return Resolved(await self._kept(digest))

    async def keep(self, resolved: Resolved) -> None:
        if resolved.keep is None:
            return
        try:
            await self.redis.set(KEY_PREFIX + resolved.keep, resolved.query, ex=self.settings.persisted_query_seconds)
        except RedisError:
            log.warning("persisted query not kept: Redis unavailable", exc_info=True)  # the client sends it again

    async def _kept(self, digest: str) -> str:
        try:  # each use keeps it another period: what clients use stays, what they stopped using leaves
            text = await self.redis.getex(KEY_PREFIX + digest, ex=self.settings.persisted_query_seconds)
        except RedisError:
            log.warning("persisted query not read: Redis unavailable", exc_info=True)
            text = None  # the client then sends the text, which runs: Redis being down costs a round trip
        if text is None:
            raise DocumentRefused("PERSISTED_QUERY_NOT_FOUND", "PersistedQueryNotFound")
        return text.decode() if isinstance(text, bytes) else str(text)

    async def _trusted(self, query: str | None, digest: str | None) -> Resolved | None:
        wanted = sha256(query) if query is not None else digest
        if wanted is None:
            return None  # no document at all: the GraphQL layer says so
        async with self.sessions() as session:
            body = await trusted_body(session, wanted)
        if body is None and query is None:
            raise DocumentRefused("PERSISTED_QUERY_NOT_FOUND", "PersistedQueryNotFound")
        if body is None:
            raise DocumentRefused("PERSISTED_QUERY_NOT_ALLOWED", "only trusted documents run on this server")
        return Resolved(body)
