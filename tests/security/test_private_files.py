"""The one private-file writer: never through a link, 0600 whatever the umask."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from butler.security.private_files import PrivateFileError, replace_private, write_private


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file of the owner's that a planted link points to."""
    path = tmp_path / "victim.txt"
    path.write_text("the owner's own words\n")
    return path


@pytest.mark.parametrize("how", ["truncate", "exclusive", "append"])
def test_the_writer_refuses_a_link_in_every_way_of_writing(tmp_path: Path, victim: Path, how):
    planted = tmp_path / "planted"
    planted.symlink_to(victim)
    with pytest.raises(PrivateFileError, match="symbolic link"):
        write_private(planted, "secret", how=how)
    assert victim.read_text() == "the owner's own words\n"


def test_a_written_file_is_0600_even_under_a_permissive_umask(tmp_path: Path):
    old = os.umask(0)
    try:
        path = write_private(tmp_path / "a" / "b" / "token", "secret", parents=True)
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "a" / "b").stat().st_mode) == 0o700


def test_a_file_others_could_read_becomes_private_when_rewritten(tmp_path: Path):
    path = tmp_path / "notes"
    path.write_text("old, longer text")
    path.chmod(0o644)
    write_private(path, "new")
    assert path.read_text() == "new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_exclusive_refuses_a_file_that_exists(tmp_path: Path):
    path = write_private(tmp_path / "spec", b"first", how="exclusive")
    with pytest.raises(FileExistsError):
        write_private(path, b"second", how="exclusive")
    assert path.read_bytes() == b"first"


def test_append_adds_lines(tmp_path: Path):
    path = tmp_path / "journal"
    write_private(path, "one\n", how="append")
    write_private(path, "two\n", how="append")
    assert path.read_text() == "one\ntwo\n"


def test_a_second_name_of_the_file_is_refused_rather_than_overwritten(tmp_path: Path, victim: Path):
    other = tmp_path / "hardlink"
    os.link(victim, other)
    with pytest.raises(PrivateFileError, match="other names"):
        write_private(other, "clobber")
    assert victim.read_text() == "the owner's own words\n"


def test_a_fifo_is_refused_without_blocking(tmp_path: Path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(PrivateFileError):
        write_private(fifo, "x")


def test_an_executable_is_0700(tmp_path: Path):
    path = write_private(tmp_path / "launch", "#!/bin/sh\n", how="exclusive", executable=True)
    assert stat.S_IMODE(path.stat().st_mode) == 0o700


def test_replace_never_shows_a_half_written_file_and_leaves_no_spare(tmp_path: Path):
    path = tmp_path / "serving.json"
    path.write_text("old")
    replace_private(path, "new")
    assert path.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["serving.json"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
