"""The jail's bridge, compiled from C (``bridge_*.c``) when butler is installed.

Every jail starts its bridge first, as its init. ``pip install`` compiles it
(setup.py's ``build_bridge`` step runs :func:`build`) into the package, at
``sandbox/bin/bridge-<hash>``, the hash that of every source file of the bridge
(``bridge_*.c`` and ``bridge*.h``, by name and content); it is never compiled on a
user's machine during a session. Without a C compiler the install fails, naming the
compiler to install. :func:`bridge_binary` runs only a binary built from exactly the
sources beside it: a checkout whose sources were edited since is refused in one
line naming the fix, rather than run a stale bridge. After editing a source::

    python butler/sandbox/bridge_binary.py

Standard library only, and importable by its path: setup.py runs it before any of
butler's dependencies are installed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

#: Where the bridge's sources are.
SOURCE_FOLDER = Path(__file__).resolve().parent
#: Where the built binary goes, relative to the package folder (``butler/``).
BINARY_FOLDER = Path("sandbox", "bin")
#: Where the package's built bridge is.
BINARY_DIR = SOURCE_FOLDER.parent / BINARY_FOLDER
#: What builds it again in a checkout.
REBUILD = "python butler/sandbox/bridge_binary.py"
COMPILE_TIMEOUT_S = 120


class BuildError(Exception):
    """The bridge could not be compiled: the message names the cause and the fix."""


class BridgeMissing(Exception):
    """The jail's bridge is not built for these sources: the message says what to run."""


def sources(folder: Path = SOURCE_FOLDER) -> tuple[list[Path], str]:
    """The C files to compile together, and the hash the binary is named by.

    The hash covers every file of the bridge, headers too, each by name and content: an
    edit of any one of them (a header changes every file that includes it) names a new
    binary.
    """
    compiled = sorted(folder.glob("bridge_*.c"))
    digest = hashlib.sha256()
    for path in sorted({*compiled, *folder.glob("bridge*.h")}):
        data = path.read_bytes()
        digest.update(f"{path.name}\0{len(data)}\0".encode())
        digest.update(data)
    return compiled, digest.hexdigest()[:16]


def binary_name(key: str) -> str:
    return f"bridge-{key}"


def build(into: Path, folder: Path = SOURCE_FOLDER) -> Path:
    """Compile the bridge from ``folder``'s sources into ``into``; the binary's path.

    Binaries of other sources left in ``into`` are removed. Raises :class:`BuildError`.
    """
    compiled, key = sources(folder)
    if not compiled:
        raise BuildError(f"no bridge_*.c in {folder}")
    compiler = shutil.which(os.environ.get("CC", "cc"))
    if compiler is None:
        raise BuildError(
            f"no C compiler ({os.environ.get('CC', 'cc')}) to build the jail's bridge: "
            "install one (apt-get install gcc, dnf install gcc) and install butler again"
        )
    into.mkdir(parents=True, exist_ok=True)
    binary = into / binary_name(key)
    handle, scratch = tempfile.mkstemp(dir=into, prefix=".bridge-")
    os.close(handle)
    argv = [compiler, "-O2", "-pthread", "-o", scratch, *map(str, compiled)]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=COMPILE_TIMEOUT_S, check=False)
        if done.returncode != 0:
            why = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["?"]
            raise BuildError(f"{compiler} could not build the jail's bridge: {why[0][:300]}")
        os.chmod(scratch, 0o755)
        os.replace(scratch, binary)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BuildError(f"{compiler} could not build the jail's bridge: {exc}") from None
    finally:
        Path(scratch).unlink(missing_ok=True)
    for old in into.glob(binary_name("*")):
        if old != binary:
            old.unlink(missing_ok=True)
    return binary


@lru_cache(maxsize=1)
def bridge_binary() -> Path:
    """The bridge's binary, built from the sources beside it; else :class:`BridgeMissing`."""
    _, key = sources()
    binary = BINARY_DIR / binary_name(key)
    if binary.is_file():
        return binary
    built = sorted(BINARY_DIR.glob(binary_name("*")))
    what = "was built from other sources" if built else "is not built"
    raise BridgeMissing(
        f"the jail's bridge ({BINARY_DIR}) {what}: build it with `{REBUILD}` in a checkout, "
        "or install butler again (pip install builds it; it needs a C compiler)"
    )


if __name__ == "__main__":
    try:
        built = build(BINARY_DIR)
    except BuildError as exc:
        sys.exit(f"butler: {exc}")
    print(built)
