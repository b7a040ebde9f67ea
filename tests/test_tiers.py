"""The suite keeps its tiers apart: the unit tier reaches for no database, and test
files share helpers through modules named for them, never by importing each other."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import REPO

TESTS = REPO / "tests"
#: Modules that are the suite's database: the unit tier never imports them.
DATABASE_MODULES = {"tests.conftest", "tests.database", "asyncpg", "butler.store.db"}


def imported(path: Path) -> set[str]:
    """The modules ``path`` imports, by their full names."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def is_test_module(name: str) -> bool:
    return name.startswith("tests.") and name.rpartition(".")[2].startswith("test_")


def test_no_test_file_imports_another():
    offenders = {
        str(path.relative_to(REPO)): sorted(filter(is_test_module, imported(path)))
        for path in TESTS.rglob("*.py")
    }
    offenders = {path: names for path, names in offenders.items() if names}
    assert offenders == {}


def test_the_unit_tier_imports_no_database():
    reaching = {
        str(path.relative_to(REPO)): sorted(imported(path) & DATABASE_MODULES)
        for path in (TESTS / "unit").rglob("*.py")
    }
    assert {path: names for path, names in reaching.items() if names} == {}


def test_the_checker_sees_a_test_module_imported(tmp_path):
    sample = tmp_path / "test_a.py"
    sample.write_text("from tests.workers.test_worker import x\nimport tests.database\n")
    assert {n for n in imported(sample) if is_test_module(n)} == {"tests.workers.test_worker"}
    assert imported(sample) & DATABASE_MODULES == {"tests.database"}
