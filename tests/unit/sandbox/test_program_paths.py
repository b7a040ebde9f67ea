"""Which folders the jail shows for the program a runtime starts: its prefix, never a home."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from butler.sandbox import policy
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


def test_an_unchanged_program_is_looked_at_once_however_many_jails_start_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "alice"))
    tool = binary(tmp_path / "opt" / "agent" / "bin" / "agent")
    looks: list[Path] = []
    real = policy.installation
    monkeypatch.setattr(
        policy, "installation", lambda exe, search: looks.append(exe) or real(exe, search)
    )
    first = program_paths(str(tool), "/usr/bin:/bin")
    assert program_paths(str(tool), "/usr/bin:/bin") == first
    assert len(looks) == 1


def test_a_program_installed_again_elsewhere_is_looked_at_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upgrade that re-points the program's link: the next jail shows the new install."""
    monkeypatch.setenv("HOME", str(tmp_path / "alice"))
    old = binary(tmp_path / "opt" / "agent-1" / "bin" / "agent")
    (old.parent.parent / "lib").mkdir()
    new = tmp_path / "opt" / "agent-2" / "bin" / "agent"
    new.parent.mkdir(parents=True)
    shutil.copy("/bin/false", new)
    (new.parent.parent / "lib").mkdir()
    link = tmp_path / "links" / "agent"
    link.parent.mkdir()
    link.symlink_to(old)
    assert old.parent.parent in program_paths(str(link), "/usr/bin:/bin")[1]
    link.unlink()
    link.symlink_to(new)
    assert new.parent.parent in program_paths(str(link), "/usr/bin:/bin")[1]
