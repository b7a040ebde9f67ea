"""The C bridge's build: every one of its files is compiled, and an edit of any one of them,
its header too, builds a new binary rather than running the one cached before.

The binary is cached by a hash of its sources (``sandbox/native.py``): a file left out of
that hash would leave a stale bridge, the jail's init, running after an upgrade that
changed it. Real ``cc``, on a copy of the sources.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from butler.sandbox import native


@pytest.fixture
def sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of the bridge's files the build reads, and an empty cache of its own."""
    if shutil.which("cc") is None:
        pytest.fail("no C compiler (cc): scripts/setup-dev installs gcc")
    copy = tmp_path / "src"
    copy.mkdir()
    for path in native.SOURCE_FOLDER.glob("bridge*.[ch]"):
        shutil.copy(path, copy / path.name)
    monkeypatch.setattr(native, "SOURCE_FOLDER", copy)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(native.CHOICE_VARIABLE, raising=False)
    native.compiled_bridge.cache_clear()
    try:
        yield copy
    finally:
        native.compiled_bridge.cache_clear()


def built(edit: Path | None = None) -> Path:
    """The bridge's binary after ``edit`` got one more comment line (none: as it is)."""
    if edit is not None:
        edit.write_text(edit.read_text() + "/* edited */\n")
    native.compiled_bridge.cache_clear()
    binary = native.compiled_bridge()
    assert binary is not None, "the C bridge did not build"
    return binary


@pytest.mark.parametrize("edited", ["bridge.h", "bridge_relay.c"])
def test_an_edit_of_any_bridge_file_builds_a_new_binary(sources: Path, edited: str):
    before = built()
    assert built() == before  # nothing edited: the cached one
    after = built(sources / edited)
    assert after != before
    assert after.is_file() and before.is_file()
