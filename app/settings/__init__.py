"""Every knob of newsagg, one pydantic-settings class composed of a part per concern; defaults are the design
documents' numbers. Each part lives in a module of its own: `state` (PostgreSQL, Redis, home), `api` (the GraphQL
edge and rate limits), `crawl` (scheduling, fetching, politeness, article pages, WebSub, parsing), `serving` (feeds,
stories, search, the demo) and `operations` (supervision, workers, retention, observability)."""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

from pydantic import AliasChoices, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from app.settings.api import ApiSettings
from app.settings.crawl import CrawlSettings
from app.settings.operations import OperationsSettings
from app.settings.serving import ServingSettings
from app.settings.state import StateSettings, to_asyncpg_url

__all__ = ["Settings", "environment_name", "get_settings", "settings_reference", "to_asyncpg_url"]


# pydantic orders the fields of the parts from the last base to the first: the reference table reads state first
class Settings(OperationsSettings, ServingSettings, CrawlSettings, ApiSettings, StateSettings):
    """Read from the environment (prefix `NEWSAGG_`, except DATABASE_URL / REDIS_URL / MEILI_URL) and from `.env`."""

    model_config = SettingsConfigDict(env_prefix="NEWSAGG_", env_file=".env", extra="ignore", populate_by_name=True)

    @field_validator("story_merge_seconds", "crawl_priority_every_seconds", "share_click_flush_seconds")
    @classmethod
    def _whole_cycles(cls, seconds: int) -> int:
        if not (0 < seconds < 60 and 60 % seconds == 0) and not (seconds >= 60 and 3600 % seconds == 0 == seconds % 60):
            raise ValueError("a divisor of 60, or whole minutes dividing an hour")
        return seconds

    @model_validator(mode="after")
    def _numbers_in_range(self) -> Settings:
        """Every number here is a count, a size, a duration or a rate: finite, and 0 or more. NEWSAGG_SESSION_DAYS=inf
        stops the process at its start, not each sign-up later."""
        for name, value in self:
            if isinstance(value, int | float) and not isinstance(value, bool) and not 0 <= value < math.inf:
                raise ValueError(f"{environment_name(name)} must be a finite number, 0 or more (not {value})")
        return self

    @property
    def metrics_folder(self) -> Path:
        return (self.metrics_dir or self.home / "metrics").expanduser().resolve()


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()


def environment_name(field: str) -> str:
    """The environment variable that sets `field`."""
    alias = Settings.model_fields[field].validation_alias
    if isinstance(alias, AliasChoices):
        return str(alias.choices[0])
    return f"NEWSAGG_{field.upper()}"


def settings_reference() -> str:
    """A Markdown table of every setting: variable, default, meaning (the README embeds it)."""
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for name, field in Settings.model_fields.items():
        default = field.default_factory() if field.default_factory else field.default  # type: ignore[call-arg]
        shown = "unset" if default is None else "`./.newsagg`" if name == "home" else f"`{default}`"
        rows.append(f"| `{environment_name(name)}` | {shown} | {field.description or ''} |")
    return "\n".join(rows)
