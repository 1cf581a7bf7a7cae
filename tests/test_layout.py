"""The repository's shape: graphql/ holds documents only, dependencies point one way, schema.graphql is fresh."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from app.api.schema import build_schema
from app.settings import Settings
from graphql import parse, validate
from tests.conftest import GRAPHQL_DIR, REPO

FRAMEWORKS = ("strawberry", "starlette", "arq", "uvicorn")


def test_import_graphql_is_graphql_core() -> None:
    import graphql

    assert Path(graphql.__file__).parent.parent.name == "site-packages"
    assert hasattr(graphql, "GraphQLSchema")


def test_graphql_folder_holds_only_operation_documents() -> None:
    files = [p for p in GRAPHQL_DIR.rglob("*") if p.is_file()]
    assert files
    assert all(p.suffix == ".graphql" for p in files), [p.name for p in files]


def test_every_document_is_valid_against_the_schema() -> None:
    schema = build_schema(Settings(_env_file=None))._schema  # type: ignore[call-arg]
    for path in sorted(GRAPHQL_DIR.glob("*.graphql")):
        errors = validate(schema, parse(path.read_text()))
        assert not errors, f"{path.name}: {errors}"


def test_schema_graphql_is_generated_from_the_code() -> None:
    committed = (REPO / "schema.graphql").read_text()
    current = build_schema(Settings(_env_file=None)).as_str() + "\n"  # type: ignore[call-arg]
    assert committed == current, "schema.graphql is stale: run `newsagg schema > schema.graphql`"


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", sorted((REPO / "app").rglob("*.py")), ids=lambda p: str(p.relative_to(REPO)))
def test_dependency_direction(path: Path) -> None:
    """Only app/api and the CLI may use the web frameworks; app/api never imports jobs (and vice versa)."""
    relative = path.relative_to(REPO / "app").parts
    imported = _imports(path)
    if relative[0] not in ("api", "cli.py"):
        leaks = {name for name in imported if name.split(".")[0] in FRAMEWORKS}
        assert not leaks, f"{path} imports {leaks}"
    if relative[0] == "api":
        assert not {name for name in imported if name.split(".")[0] == "jobs"}


@pytest.mark.parametrize("path", sorted((REPO / "jobs").rglob("*.py")), ids=lambda p: p.name)
def test_jobs_never_import_the_api(path: Path) -> None:
    assert not {name for name in _imports(path) if name.startswith("app.api")}


def test_readme_settings_table_is_current() -> None:
    from app.settings import settings_reference

    readme = (REPO / "README.md").read_text()
    begin = readme.index("-->", readme.index("<!-- settings:begin")) + 4
    end = readme.index("<!-- settings:end -->")
    assert readme[begin:end].strip() == settings_reference(), "README settings are stale: paste `newsagg settings`"


@pytest.mark.parametrize("path", sorted((REPO / "bench").rglob("*.py")), ids=lambda p: str(p.relative_to(REPO)))
def test_benchmarks_stand_without_the_tests(path: Path) -> None:
    """A benchmark runs from an installed tree: what it shares with the tests lives in bench/ or app/, not tests/."""
    assert not {name for name in _imports(path) if name.split(".")[0] == "tests"}
