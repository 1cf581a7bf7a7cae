"""Share codes, pure: 64 random bits and a 32-bit HMAC-SHA256 tag, base64url (16 characters). A made-up code is
refused by its shape or its tag, before any lookup: a flood of them costs neither PostgreSQL nor Redis anything."""

from __future__ import annotations

import base64
import hmac
import re
import secrets
from hashlib import sha256

RANDOM_BYTES = 8  # 64 bits: guessing one of a billion links takes ~2^34 tries per hit, each refused by its tag
TAG_BYTES = 4
CODE_LENGTH = 16  # base64url of 12 bytes, no padding
KEY_BYTES = 32
_SHAPE = re.compile(r"[A-Za-z0-9_-]{16}")


def new_key() -> bytes:
    return secrets.token_bytes(KEY_BYTES)


def mint(key: bytes) -> str:
    nonce = secrets.token_bytes(RANDOM_BYTES)
    return base64.urlsafe_b64encode(nonce + _tag(key, nonce)).decode()


def well_formed(code: str) -> bool:
    """16 base64url characters (ASCII only: `str.isalnum` would let other scripts' letters through)."""
    return _SHAPE.fullmatch(code) is not None


def authentic(code: str, key: bytes) -> bool:
    """A code this key minted: its shape, then its tag (compared in constant time)."""
    if not well_formed(code):
        return False
    raw = base64.urlsafe_b64decode(code)
    nonce, tag = raw[:RANDOM_BYTES], raw[RANDOM_BYTES:]
    return hmac.compare_digest(tag, _tag(key, nonce))


def _tag(key: bytes, nonce: bytes) -> bytes:
    return hmac.new(key, nonce, sha256).digest()[:TAG_BYTES]
