"""Why a source operation was refused: a code the API turns into a typed error, the message, and the field."""

from __future__ import annotations

import enum


class SourceErrorCode(enum.StrEnum):
    NOT_FOUND = "not_found"
    THROTTLED = "throttled"
    INVALID_URL = "invalid_url"
    ADDRESS_REFUSED = "address_refused"
    DUPLICATE = "duplicate"
    INVALID = "invalid"
    FORBIDDEN = "forbidden"
    INVALID_REGION = "invalid_region"  # a country that is no ISO 3166-1 alpha-2 code (app/places/countries.py)
    UNSAFE_XML = "unsafe_xml"  # an OPML document declaring entities or external references


class SourceRejected(Exception):
    """A source the caller asked for (or a change to one) that newsagg will not store."""

    def __init__(
        self, code: SourceErrorCode, message: str, field: str | None = None, retry_after_s: int | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.field = field
        self.retry_after_s = retry_after_s
