"""The bridge's build: every file of it is compiled, an edit of any one (its header too) is a
binary the daemon does not have until it is built again, and no compiler is said in one line.

The binary is named by a hash of its sources (``sandbox/bridge_binary.py``): a file left
out of that hash would leave a stale bridge, the jail's init, running after an edit or
an upgrade that changed it. Real ``cc``, on a copy of the sources.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from butler.sandbox import bridge_binary as module
from butler.sandbox.bridge_binary import BridgeMissing, BuildError, build, sources


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A copy of the bridge's files the build reads."""
    if shutil.which("cc") is None:
        pytest.fail("no C compiler (cc): scripts/setup-dev installs gcc")
    folder = tmp_path / "src"
    folder.mkdir()
    for path in module.SOURCE_FOLDER.glob("bridge*.[ch]"):
        shutil.copy(path, folder / path.name)
    return folder


@pytest.mark.parametrize("edited", ["bridge.h", "bridge_relay.c"])
def test_an_edit_of_any_bridge_file_names_a_new_binary(copy: Path, edited: str):
    before = build(copy / "bin", copy)
    (copy / edited).write_text((copy / edited).read_text() + "/* edited */\n")
    after = build(copy / "bin", copy)
    assert after != before and after.is_file()
    assert not before.exists(), "a binary of other sources is removed by the build"


def test_every_file_is_compiled_into_a_bridge_that_runs(copy: Path):
    binary = build(copy / "bin", copy)
    usage = subprocess.run([binary], capture_output=True, text=True, check=False)
    assert usage.returncode == 2 and "bridge SOCKET PROXY_PORT" in usage.stderr


def test_without_a_compiler_the_build_names_the_one_to_install(
    copy: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("CC", "no-such-cc")
    with pytest.raises(BuildError, match=r"no C compiler \(no-such-cc\).*apt-get install gcc"):
        build(copy / "bin", copy)


def test_a_bridge_built_from_other_sources_is_refused_naming_the_rebuild(
    copy: Path, monkeypatch: pytest.MonkeyPatch
):
    build(copy / "bin", copy)
    (copy / "bridge_io.c").write_text((copy / "bridge_io.c").read_text() + "/* edited */\n")
    monkeypatch.setattr(module, "SOURCE_FOLDER", copy)
    monkeypatch.setattr(module, "BINARY_DIR", copy / "bin")
    monkeypatch.setattr(module, "sources", lambda: sources(copy))
    module.bridge_binary.cache_clear()
    try:
        with pytest.raises(BridgeMissing, match="was built from other sources: build it with"):
            module.bridge_binary()
    finally:
        module.bridge_binary.cache_clear()
