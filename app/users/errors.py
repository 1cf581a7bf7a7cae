"""Why an account operation was refused: a code the API turns into a typed error, the message, and the field."""

from __future__ import annotations

import enum


class AccountErrorCode(enum.StrEnum):
    INVALID_EMAIL = "invalid_email"
    WEAK_PASSWORD = "weak_password"
    EMAIL_TAKEN = "email_taken"
    INVALID_CREDENTIALS = "invalid_credentials"
    UNAUTHENTICATED = "unauthenticated"
    NOT_FOUND = "not_found"
    INVALID = "invalid"
    INVALID_REGION = "invalid_region"  # not an ISO 3166-1 alpha-2 country code
    INVALID_LANGUAGE = "invalid_language"  # not ISO 639 language codes, or too many


class AccountRejected(Exception):
    def __init__(self, code: AccountErrorCode, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.code, self.field = code, field
