"""Which folders the jail shows for the program a runtime starts: its prefix, never a home."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from butler.sandbox.policy import program_paths


def binary(path: Path) -> Path:
    """An executable file with no shebang (a copy of ``true``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy("/bin/true", path)
    return path


def test_a_program_in_the_homes_own_bin_shows_that_bin_not_the_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "alice"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    tool = binary(home / "bin" / "agent")
    exe, folders = program_paths(str(tool), "/usr/bin:/bin")
    assert exe == str(tool)
    assert home not in folders, "the whole home (its .ssh among it) would be in the jail"
    assert home / "bin" in folders


def test_a_program_in_a_tools_own_bin_shows_its_whole_prefix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "alice"))
    prefix = tmp_path / "opt" / "agent-1.2"
    tool = binary(prefix / "bin" / "agent")
    (prefix / "lib").mkdir()
    _, folders = program_paths(str(tool), "/usr/bin:/bin")
    assert prefix in folders  # its lib/ beside bin/, as a pyenv interpreter's
