"""requirements.lock pins every package pyproject.toml names (the runtime and the dev extra), so CI and the image
install what the lock says; scripts/lock refreshes it."""

from __future__ import annotations

import re
import tomllib

from tests.conftest import REPO


def _name(requirement: str) -> str:
    name = re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_dependency_is_pinned_in_the_lock() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = {_name(r) for r in project["dependencies"] + project["optional-dependencies"]["dev"]} - {"newsagg"}
    pinned = {_name(line) for line in (REPO / "requirements.lock").read_text().splitlines() if "==" in line}
    assert sorted(wanted - pinned) == [], "requirements.lock is stale: run scripts/lock"
