"""Why an alerts operation was refused: a code the API turns into a typed error, the message, and the field."""

from __future__ import annotations

import enum


class AlertErrorCode(enum.StrEnum):
    INVALID = "invalid"
    NOT_FOUND = "not_found"
    FORBIDDEN = "forbidden"
    ADDRESS_REFUSED = "address_refused"
    INVALID_REGION = "invalid_region"  # a region that is no ISO 3166-1 alpha-2 code (app/places/countries.py)


class AlertRejected(Exception):
    def __init__(self, code: AlertErrorCode, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.code, self.field = code, field
