"""A repository's ``.git`` made ready for a builder's jail, and what a builder redirected
in it found (butler/builders/git_folder.py), on real folders: no git needed."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from butler.builders.git_folder import make_object_folders, redirected
from butler.sandbox.git_view import OBJECT_FOLDERS
from butler.security import untrusted


def git_folder(root: Path) -> Path:
    for name in ("objects/info", "objects/pack", "refs/heads", "logs/refs/heads"):
        (root / ".git" / name).mkdir(parents=True)
    return root


def test_every_objects_folder_is_made_with_the_mode_of_objects(tmp_path: Path):
    repo = git_folder(tmp_path / "shared")
    os.chmod(repo / ".git" / "objects", 0o2775)  # a repository a group shares
    make_object_folders(repo)
    made = sorted(p.name for p in (repo / ".git" / "objects").iterdir())
    assert made == sorted({*OBJECT_FOLDERS, "info"})
    assert stat.S_IMODE(os.stat(repo / ".git" / "objects" / "ab").st_mode) & 0o070 == 0o070
    assert redirected(repo) is None


def test_an_objects_folder_that_is_a_link_is_refused_not_followed(tmp_path: Path):
    repo = git_folder(tmp_path / "repo")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (repo / ".git" / "objects" / "ab").symlink_to(elsewhere)
    with pytest.raises(untrusted.FileRefused):
        make_object_folders(repo)
    assert not any(elsewhere.iterdir())
    assert (
        redirected(repo)
        == ".git/objects/ab is a link: git, the owner's too, would follow it outside"
    )


def test_a_fifo_and_a_file_where_git_keeps_a_folder_are_found(tmp_path: Path):
    repo = git_folder(tmp_path / "repo")
    os.mkfifo(repo / ".git" / "refs" / "heads" / "main")
    assert "refs/heads/main is a FIFO" in (redirected(repo) or "")
    os.unlink(repo / ".git" / "refs" / "heads" / "main")
    (repo / ".git" / "objects" / "cd").write_text("")
    assert "objects/cd is a file where git keeps a folder" in (redirected(repo) or "")
