"""Password hashing with scrypt (memory-hard; in the standard library): `scrypt$n$r$p$salt$hash`, base64 parts.

Hashing costs ~16 MiB and tens of milliseconds on purpose: callers run it in a thread."""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import os

from prometheus_client import Counter

HASHES = Counter("newsagg_password_hashes", "scrypt computations (sign-ups and log-ins, unknown emails included)")
N, R, P = 1 << 14, 8, 1  # RFC 7914's interactive-login parameters
KEY_BYTES = 32


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def hash_password(password: str) -> str:
    salt = os.urandom(16)
    HASHES.inc()
    key = hashlib.scrypt(password.encode(), salt=salt, n=N, r=R, p=P, dklen=KEY_BYTES, maxmem=64 * 1024 * 1024)
    return f"scrypt${N}${R}${P}${_b64(salt)}${_b64(key)}"


def verify_password(password: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt, key = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = base64.b64decode(key)
        HASHES.inc()
        found = hashlib.scrypt(password.encode(), salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p),
                               dklen=len(expected), maxmem=64 * 1024 * 1024)  # fmt: skip
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(found, expected)


@functools.cache
def dummy_hash() -> str:
    """Compared against when an email is unknown, so a login costs the same either way (no account probing by
    timing). Made on first use: importing the API costs no scrypt."""
    return hash_password(base64.b64encode(os.urandom(12)).decode())
