"""The compiled bridge's cache folder: no other local user can have a jail run their binary.

The binary is checked once and then bound into every jail as its init for as long as the
daemon runs. Run as root with the cache under a folder ``nobody`` owns (``HOME`` or
``XDG_CACHE_HOME`` left pointing into a user's folder), that user swapped the folder for
their own holding a binary of the same name, and the next jail ran it. Real bubblewrap;
the swap is done with ``runuser -u nobody``, as that user would.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from butler.sandbox import native
from tests.helpers import require_jail
from tests.sandbox.jailed import jailed

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="another user exists to run as only for root"),
]

PLANTED = "#!/bin/sh\necho planted by nobody\n"


def as_nobody(script: str) -> None:
    done = subprocess.run(
        ["runuser", "-u", "nobody", "--", "/bin/sh", "-c", script],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture
def theirs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder ``nobody`` owns (and reaches: pytest's are root's alone), the cache's parent."""
    above = Path(tempfile.mkdtemp(prefix="butler-cache-test-"))
    above.chmod(0o755)
    folder = above / "nobody-home"
    folder.mkdir()
    os.chown(folder, *_nobody())
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    native.compiled_bridge.cache_clear()
    try:
        yield folder
    finally:
        native.compiled_bridge.cache_clear()
        shutil.rmtree(above)


async def test_another_user_owning_a_folder_above_the_cache_cannot_plant_the_jails_bridge(
    tmp_path: Path, theirs: Path
):
    require_jail()
    chosen = await asyncio.to_thread(native.compiled_bridge)
    name = chosen.name if chosen else "bridge-x"
    # nobody renames root's folder away (theirs is the folder above) and puts theirs.
    as_nobody(
        f"cd {theirs} && mv butler butler.root 2>/dev/null; mkdir -p butler && "
        f"printf '{PLANTED}' > butler/{name} && chmod 755 butler/{name}"
    )
    _, out, err, _ = await jailed(tmp_path, ["/bin/sh", "-c", "echo the runtime ran"])
    assert b"planted" not in out
    assert out == b"the runtime ran\n", err


def _nobody() -> tuple[int, int]:
    entry = pwd.getpwnam("nobody")
    return entry.pw_uid, entry.pw_gid
