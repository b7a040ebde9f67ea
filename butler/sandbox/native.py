"""The bridge compiled from C (``bridge_*.c``), built once per machine when a C compiler is here.

Every jail starts its bridge first; on CPython that start is most of what the
bridge costs a session (measured: ``benchmarks/jail_start.py``, README "How a
session is locked down"). The C bridge does exactly what ``bridge.py`` does
and starts in well under a millisecond. It is compiled on first use by the
machine's ``cc`` into a private cache folder (``$XDG_CACHE_HOME/butler``, else
``~/.cache/butler``), named by a hash of its sources (every ``bridge_*.c`` and
``bridge*.h``), so an upgrade, or an edit of any one of them, builds anew and a
stale binary is never run. Without a compiler (or when the build fails),
jails run ``bridge.py`` on the system's Python: the same behaviour, slower;
one log line says so.

Why compiled here rather than shipped: a binary in the wheel would make the
package one per platform; every Debian/Ubuntu machine that builds Python
packages has ``cc`` (build-essential), and the source is some 900 lines of plain C,
in files named for their concepts (``bridge_main.c`` lists them).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import stat
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

log = logging.getLogger("butler.sandbox")

#: Where the C bridge's files are: ``bridge_*.c``, compiled together, and ``bridge.h``.
SOURCE_FOLDER = Path(__file__).parent
#: ``BUTLER_JAIL_BRIDGE=python`` runs the Python bridge even where the C one builds.
CHOICE_VARIABLE = "BUTLER_JAIL_BRIDGE"
COMPILE_TIMEOUT_S = 60


def cache_folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "butler"


def _private_folder(folder: Path) -> bool:
    """Whether ``folder`` is a real folder of this user that no one else may write."""
    try:
        found = os.lstat(folder)
    except OSError:
        return False
    return (
        stat.S_ISDIR(found.st_mode)
        and found.st_uid == os.getuid()
        and not found.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


def _held_by_us(folder: Path) -> bool:
    """Whether no other user can replace ``folder``: no folder above it (as written and as
    it resolves) is another user's or writable by others, unless sticky (as /tmp is).

    The binary's path is checked once and then run by every jail, as the jail's init, for
    as long as the daemon runs: whoever may rename a folder above it (a daemon run as root
    with ``HOME`` or ``XDG_CACHE_HOME`` in a user's folder) could put their own in its place.
    """
    for path in {*folder.parents, *Path(os.path.realpath(folder)).parents}:
        try:
            found = os.lstat(path)
        except OSError:
            return False
        if found.st_uid not in (0, os.getuid()):
            return False
        if found.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not found.st_mode & stat.S_ISVTX:
            return False
    return True


def sources() -> tuple[list[Path], str]:
    """The C files to compile, and the hash the binary is named by.

    The hash covers every file of the bridge, headers too, each by name and content: a
    binary in the cache is run only if it was built from exactly these files, and an edit
    of any one of them (a header changes every file that includes it) builds a new one.
    """
    folder = SOURCE_FOLDER
    compiled = sorted(folder.glob("bridge_*.c"))
    digest = hashlib.sha256()
    for path in sorted({*compiled, *folder.glob("bridge*.h")}):
        data = path.read_bytes()
        digest.update(f"{path.name}\0{len(data)}\0".encode())
        digest.update(data)
    return compiled, digest.hexdigest()[:16]


@lru_cache(maxsize=1)
def compiled_bridge() -> Path | None:
    """The C bridge's binary (built now if needed), or None: the Python bridge then."""
    if os.environ.get(CHOICE_VARIABLE, "").strip().lower() == "python":
        return None
    compiled, key = sources()
    folder = cache_folder()
    binary = folder / f"bridge-{key}"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        return _without(f"cannot make {folder}: {exc.strerror}")
    if not _private_folder(folder):
        return _without(f"{folder} is not a private folder of this user")
    if not _held_by_us(folder.absolute()):
        return _without(
            f"a folder above {folder} is another user's or writable by others",
            "set XDG_CACHE_HOME to a folder only this user can change",
        )
    if binary.is_file() and not binary.is_symlink():
        return binary
    compiler = shutil.which(os.environ.get("CC", "cc"))
    if compiler is None:
        return _without("no C compiler (cc) is installed")
    handle, scratch = tempfile.mkstemp(dir=folder, prefix=".bridge-")
    os.close(handle)
    argv = [compiler, "-O2", "-pthread", "-o", scratch, *map(str, compiled)]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=COMPILE_TIMEOUT_S, check=False)
        if done.returncode != 0:
            why = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["?"]
            return _without(f"{compiler} failed: {why[0][:300]}")
        os.chmod(scratch, 0o500)
        os.replace(scratch, binary)  # atomic: two daemons building at once both end well
    except (OSError, subprocess.TimeoutExpired) as exc:
        return _without(f"{compiler} failed: {exc}")
    finally:
        Path(scratch).unlink(missing_ok=True)
    return binary


def _without(why: str, fix: str = "install a C compiler (apt-get install gcc)") -> None:
    log.warning(
        "the jail's C bridge is not built (%s); jails run the Python bridge, which costs "
        "each session about 10 ms more CPU. To build it, %s",
        why,
        fix,
    )
    return None
