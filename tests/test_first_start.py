"""A fresh deployment's first start (`newsagg up`, `newsagg migrate --first-start`): the default sources and the
administrator the settings name, made once; an account that signed up with that email first is not made one."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select

from app.runtime.first_start import FirstStartFailed, first_start
from app.services import Services
from app.settings import Settings
from app.sources.models import Source
from app.users.models import User
from app.users.service import register
from tests.newsroom import PASSWORD


async def _run(services: Services, settings: Settings) -> None:
    async with services.db.begin() as session:
        await first_start(session, settings)


async def _admins(services: Services) -> list[tuple[str, bool]]:
    async with services.db() as session:
        return [(u.email, u.is_admin) for u in await session.scalars(select(User).order_by(User.id))]


async def test_the_first_start_adds_default_sources_and_the_named_administrator_once(
    services: Services, settings: Settings, tmp_path: Path
) -> None:
    (tmp_path / "password").write_text(PASSWORD + "\n")
    named = settings.model_copy(update={"admin_email": "ops@example.com", "admin_password_file": tmp_path / "password"})
    await _run(services, named)
    async with services.db() as session:
        sources = await session.scalar(select(func.count()).select_from(Source))
    assert (sources or 0) > 10
    await _run(services, named)  # the next start changes nothing
    async with services.db() as session:
        assert await session.scalar(select(func.count()).select_from(Source)) == sources
    assert await _admins(services) == [("ops@example.com", True)]


async def test_an_account_that_holds_the_email_already_is_left_a_reader(
    services: Services, settings: Settings, tmp_path: Path
) -> None:
    async with services.db.begin() as session:
        await register(session, "ops@example.com", PASSWORD)
    (tmp_path / "password").write_text(PASSWORD)
    await _run(services, settings.model_copy(update={"admin_email": "ops@example.com",
                                                     "admin_password_file": tmp_path / "password"}))  # fmt: skip
    assert await _admins(services) == [("ops@example.com", False)]


async def test_an_administrator_without_a_readable_password_stops_the_start(
    services: Services, settings: Settings, tmp_path: Path
) -> None:
    with pytest.raises(FirstStartFailed, match="NEWSAGG_ADMIN_PASSWORD_FILE"):
        await _run(services, settings.model_copy(update={"admin_email": "ops@example.com"}))
    with pytest.raises(FirstStartFailed, match="No such file"):
        await _run(services, settings.model_copy(update={"admin_email": "ops@example.com",
                                                         "admin_password_file": tmp_path / "missing"}))  # fmt: skip


async def test_once_the_administrator_exists_its_password_file_may_be_emptied_or_removed(
    services: Services, settings: Settings, tmp_path: Path
) -> None:
    password = tmp_path / "password"
    password.write_text(PASSWORD)
    named = settings.model_copy(update={"admin_email": "ops@example.com", "admin_password_file": password})
    await _run(services, named)
    password.write_text("")  # as docs/operations.md allows after the first start
    await _run(services, named)
    password.unlink()
    await _run(services, named)
    assert await _admins(services) == [("ops@example.com", True)]
