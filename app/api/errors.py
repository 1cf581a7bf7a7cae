"""GraphQL errors for bad requests, each with a stable `extensions.code` clients can switch on."""

from __future__ import annotations

from graphql import GraphQLError


class BadRequest(GraphQLError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, extensions={"code": code})


def bad_cursor(message: str = "the cursor is not one this connection issued") -> BadRequest:
    return BadRequest("BAD_CURSOR", message)


def bad_argument(message: str) -> BadRequest:
    return BadRequest("BAD_USER_INPUT", message)
