"""No file by path from a caller: a role is a name in a roles/ folder, nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from butler.builders.plan import find_role
from butler.errors import UserError


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    butler, repo = tmp_path / "butler", tmp_path / "repo"
    (butler / "roles").mkdir(parents=True)
    (repo / "roles").mkdir(parents=True)
    (butler / "roles" / "reviewer.md").write_text("ROLE: reviewer\n")
    (repo / "roles" / "custom.md").write_text("ROLE: custom\n")
    (repo / "roles" / "escape.md").symlink_to("/etc/passwd")
    (tmp_path / "outside.md").write_text("not a role\n")
    return butler, repo


@pytest.mark.parametrize(
    "role",
    [
        "/etc/passwd",
        "/etc/shadow",
        "../x",
        "../outside",
        "../outside.md",
        "roles/../x",
        "escape",
        "",
    ],
)
def test_a_path_is_refused_in_one_line(folders, role):
    butler, repo = folders
    with pytest.raises(UserError) as refused:
        find_role(butler, role, repo)
    message = str(refused.value)
    assert "\n" not in message and repr(role) in message and "no path" in message
    assert "root:" not in message  # nothing of the file leaks into the refusal


def test_names_find_the_butlers_roles_then_the_repositorys(folders):
    butler, repo = folders
    assert find_role(butler, "reviewer", repo).path == butler / "roles" / "reviewer.md"
    assert find_role(butler, "custom.md", repo).path == repo / "roles" / "custom.md"
