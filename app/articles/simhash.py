"""SimHash fingerprints and their LSH bands (DESIGN §4), pure and vectorized.

Tokens are the lowercased words longer than 2 characters plus their word 3-grams; each token's mmh3 128-bit hash
(low 64 bits) votes +1/-1 on each bit; the sign of each bit's total is the fingerprint. Near-duplicates are within
Hamming distance 3; with 4 bands of 16 bits, any two of them share at least one band (pigeonhole), so band
equality finds every candidate.
"""

from __future__ import annotations

import re

import mmh3
import numpy as np

BITS = 64
BANDS = 4
BAND_BITS = BITS // BANDS
NEAR_DUPLICATE_DISTANCE = 3
_WORD = re.compile(r"\w+", re.UNICODE)
_SHIFTS = np.arange(BITS, dtype=np.uint64)


def tokens(text: str) -> list[str]:
    words = [w for w in _WORD.findall(text.lower()) if len(w) > 2]
    return words + [" ".join(words[i : i + 3]) for i in range(len(words) - 2)]


def simhash(text: str) -> int:
    """Signed 64-bit fingerprint (PostgreSQL bigint); 0 for a text without tokens."""
    parts = tokens(text)
    if not parts:
        return 0
    hashes = np.array([mmh3.hash64(t, signed=False)[0] for t in parts], dtype=np.uint64)
    bits = ((hashes[:, None] >> _SHIFTS) & np.uint64(1)).astype(np.int32)
    votes = bits.sum(axis=0) * 2 - len(parts)
    value = int((np.uint64(1) << _SHIFTS[votes > 0]).sum(dtype=np.uint64))
    return value - (1 << 64) if value >= 1 << 63 else value


def hamming(a: int, b: int) -> int:
    return ((a ^ b) & ((1 << 64) - 1)).bit_count()


def bands(fingerprint: int) -> list[int]:
    """One integer per band, distinct across band positions (band i's values live in [i·2^16, (i+1)·2^16))."""
    unsigned = fingerprint & ((1 << 64) - 1)
    mask = (1 << BAND_BITS) - 1
    return [(i << BAND_BITS) | ((unsigned >> (BAND_BITS * i)) & mask) for i in range(BANDS)]
