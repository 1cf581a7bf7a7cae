"""Language codes as readers and clients give them, pure: lowercase ISO 639 codes, a bounded number of them."""

from __future__ import annotations

import re
from collections.abc import Iterable

LANGUAGE_CODE = re.compile("[a-z]{2,3}")
MAX_LANGUAGES = 20


def checked_languages(languages: Iterable[str] | None) -> list[str]:
    """The codes stripped and lower-cased, in order ("FR " -> "fr"); ValueError for more than MAX_LANGUAGES or for
    anything that is not the shape of an ISO 639 code ("english", "e n")."""
    codes = [code.strip().lower() for code in languages or ()]
    if len(codes) > MAX_LANGUAGES or not all(LANGUAGE_CODE.fullmatch(code) for code in codes):
        raise ValueError(f'at most {MAX_LANGUAGES} ISO 639-1 codes such as "en" or "fr"')
    return codes
