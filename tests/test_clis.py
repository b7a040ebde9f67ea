"""The pinned agent CLIs of ``clis/``: the lock file reproduces them with ``npm ci``."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import REPO, missing_tool

pytestmark = pytest.mark.slow

CLIS = REPO / "clis"


async def test_npm_ci_accepts_the_lock_file_as_it_is(tmp_path: Path) -> None:
    # npm ci refuses a lock that lacks any package the pinned ones list, even an
    # optional one for another platform (OpenCode's), so a fresh clone could not install.
    npm = shutil.which("npm")
    if npm is None:
        missing_tool("npm")
    for name in ("package.json", "package-lock.json"):
        shutil.copy(CLIS / name, tmp_path / name)
    argv = [npm, "ci", "--dry-run", "--ignore-scripts", "--offline", "--no-audit", "--no-fund"]
    done = await asyncio.create_subprocess_exec(
        *argv, cwd=tmp_path, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    output, _ = await done.communicate()
    assert done.returncode == 0, output.decode(errors="replace")[-2000:]


def test_the_lock_holds_every_platforms_package_at_the_pinned_version() -> None:
    pins = json.loads((CLIS / "package.json").read_text())["dependencies"]
    packages = json.loads((CLIS / "package-lock.json").read_text())["packages"]
    for name, version in pins.items():
        locked = packages[f"node_modules/{name}"]
        assert locked["version"] == version, name
        for optional, wanted in (locked.get("optionalDependencies") or {}).items():
            entry = packages.get(f"node_modules/{optional}")
            assert entry is not None, f"{optional} (of {name}) is missing from the lock"
            # An alias ("npm:@openai/codex@0.169.0-linux-x64") pins the version after its "@".
            assert entry["version"] == wanted.rpartition("@")[2], optional
