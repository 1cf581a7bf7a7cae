"""Why an account operation was refused, as every account, engagement and preference mutation reports it."""

from __future__ import annotations

import strawberry

from app.places.countries import InvalidRegion
from app.users.errors import AccountErrorCode, AccountRejected

AccountErrorCodeEnum = strawberry.enum(AccountErrorCode, name="AccountErrorCode")


@strawberry.type(description="Why an account operation was refused.")
class AccountError:
    code: AccountErrorCodeEnum  # type: ignore[valid-type]
    field: str | None
    message: str


def refused(error: AccountRejected | InvalidRegion) -> list[AccountError]:
    code = AccountErrorCode.INVALID_REGION if isinstance(error, InvalidRegion) else error.code
    return [AccountError(code=code, field=error.field, message=str(error))]
