"""The one way the daemon touches what a runtime can write (butler/security/untrusted.py):
no link anywhere below the trusted folder, regular files only, bounded, writes that
replace rather than write through. docs/security.md, "The trust map"."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from butler.runtimes.mcp_config import ConfigFileError, write_files
from butler.security import untrusted
from tests.security.untrusted import SECRET, finishes


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "owner" / "token"
    path.parent.mkdir()
    path.write_text(SECRET + "\n")
    return path


def test_a_plain_file_below_the_root_is_read(tmp_path: Path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f.md").write_text("hello")
    assert untrusted.read(tmp_path, "a/b/f.md", 100) == b"hello"
    assert untrusted.is_file(tmp_path, "a/b/f.md") and untrusted.exists(tmp_path, "a/b/f.md")
    assert untrusted.names(tmp_path, "a/b") == ["f.md"]


@pytest.mark.parametrize("where", ["file", "folder", "top"])
def test_a_link_anywhere_below_the_root_is_refused(tmp_path: Path, secret: Path, where: str):
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    if where == "file":
        os.symlink(secret, root / "a" / "token")
    elif where == "folder":
        os.symlink(secret.parent, root / "a" / "b")
    else:
        os.rmdir(root / "a")
        os.symlink(secret.parent.parent, root / "a")
    relative = {"file": "a/token", "folder": "a/b/token", "top": "a/owner/token"}[where]
    with pytest.raises(untrusted.FileRefused) as refused:
        untrusted.read(root, relative, 1000)
    assert SECRET not in str(refused.value) and "\n" not in str(refused.value)
    assert untrusted.read_or_none(root, relative, 1000) is None
    assert not untrusted.is_file(root, relative)
    assert untrusted.exists(root, relative)  # there, so refused rather than taken as absent


def test_a_fifo_and_a_device_are_refused_without_hanging(tmp_path: Path):
    os.mkfifo(tmp_path / "fifo")
    os.symlink("/dev/zero", tmp_path / "zero")
    names = ["fifo", "zero"]
    if os.geteuid() == 0:  # only root makes device nodes; the link above stands in otherwise
        os.mknod(tmp_path / "device", stat.S_IFCHR | 0o600, os.makedev(1, 5))
        names.append("device")
    for name in names:
        outcome = finishes(lambda n=name: untrusted.read(tmp_path, n, 1000))
        assert isinstance(outcome, untrusted.FileRefused), (name, outcome)


@pytest.mark.parametrize("relative", ["../x", "/etc/passwd", "a/../../x"])
def test_a_name_leaving_the_root_is_refused(tmp_path: Path, relative: str):
    with pytest.raises(untrusted.FileRefused, match=r"leaves its folder|absolute path"):
        untrusted.read(tmp_path, relative, 100)


def test_a_file_past_its_bound_is_refused_or_cut(tmp_path: Path):
    (tmp_path / "big").write_bytes(b"x" * 101)
    with pytest.raises(untrusted.FileRefused, match="larger than 100 bytes"):
        untrusted.read(tmp_path, "big", 100)
    assert untrusted.read(tmp_path, "big", 100, whole=False) == b"x" * 100


def test_a_write_replaces_a_planted_link_never_writes_through_it(tmp_path: Path, secret: Path):
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(secret, root / "exclude")
    os.link(secret, root / "hard")  # a hard link: writing into it would write the token file
    untrusted.write(root, "exclude", b"mine\n")
    untrusted.write(root, "hard", b"mine\n")
    assert secret.read_text() == SECRET + "\n"
    assert (root / "exclude").read_bytes() == b"mine\n" and not (root / "exclude").is_symlink()
    assert stat.S_IMODE((root / "exclude").stat().st_mode) == 0o600


def test_a_write_below_a_linked_folder_is_refused(tmp_path: Path, secret: Path):
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(secret.parent, root / "info")
    with pytest.raises(untrusted.FileRefused):
        untrusted.write(root, "info/exclude", b"x")
    with pytest.raises(untrusted.FileRefused):
        untrusted.add_line(root, "info/exclude", "/.builders/", 1000)
    assert sorted(p.name for p in secret.parent.iterdir()) == ["token"]


def test_a_runtime_config_over_a_planted_link_replaces_it_and_leaves_its_target_alone(
    tmp_path: Path, secret: Path
):
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    os.symlink(secret, home / ".mcp.json")
    write_files({home / ".mcp.json": '{"mcpServers": {}}\n'}, (home,))
    assert secret.read_text() == SECRET + "\n"
    assert (home / ".mcp.json").read_text() == '{"mcpServers": {}}\n'
    assert stat.S_IMODE((home / ".mcp.json").stat().st_mode) == 0o600


def test_a_runtime_config_below_a_linked_folder_is_refused_naming_the_file(
    tmp_path: Path, secret: Path
):
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    os.symlink(secret.parent, home / ".codex")  # a resumed home's link to the owner's folder
    with pytest.raises(ConfigFileError, match=r"\.codex/config\.toml: cannot write"):
        write_files({home / ".codex" / "config.toml": "[mcp_servers]\n"}, (home,))
    assert sorted(p.name for p in secret.parent.iterdir()) == ["token"]


def test_a_runtime_config_outside_its_home_and_workspace_is_refused(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    with pytest.raises(ConfigFileError, match="in none of the folders"):
        write_files({tmp_path / "elsewhere.json": "{}"}, (home,))
    assert not (tmp_path / "elsewhere.json").exists()


def test_add_line_adds_once_and_replaces_a_fifo(tmp_path: Path):
    assert untrusted.add_line(tmp_path, "info/exclude", "/.builders/", 1000)
    assert not untrusted.add_line(tmp_path, "info/exclude", "/.builders/", 1000)
    assert (tmp_path / "info" / "exclude").read_text() == "/.builders/\n"
    os.unlink(tmp_path / "info" / "exclude")
    os.mkfifo(tmp_path / "info" / "exclude")
    assert finishes(lambda: untrusted.add_line(tmp_path, "info/exclude", "/b/", 1000)) is True
    assert (tmp_path / "info" / "exclude").read_text() == "/b/\n"


def test_find_walks_no_link_and_a_bounded_number_of_entries(tmp_path: Path, secret: Path):
    (tmp_path / "s" / "2026").mkdir(parents=True)
    (tmp_path / "s" / "2026" / "r-1.jsonl").write_text("{}")
    os.symlink(secret.parent, tmp_path / "s" / "more")
    os.symlink("/", tmp_path / "s" / "root")
    found = untrusted.find(tmp_path, "s", "**/r-*.jsonl", 1000)
    assert [path for _, path in found] == ["s/2026/r-1.jsonl"]
    for n in range(50):
        (tmp_path / "s" / f"d{n}").mkdir()
    assert len(untrusted.find(tmp_path, "s", "**/r-*.jsonl", 10)) <= 1
