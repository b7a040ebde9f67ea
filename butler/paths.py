"""Where butler keeps its files: one data folder per user, one sub-folder per butler install.

A butler's data folder (its owner token, runtime homes, logs, adapter files)
belongs to one install: a name *and* the folder its ``butler.toml`` is in. Two
folders both naming a butler ``health`` (two checkouts, two rosters) must not
share a token or runtime homes, so the folder records whose it is
(``install.json``) and another install of that name gets a folder of its own.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import platformdirs

from butler.processes import owner_mark
from butler.security.private_files import replace_private, write_private

log = logging.getLogger(__name__)

#: In a butler's data folder: which install (its butler.toml's folder) it belongs to.
INSTALL_FILE = "install.json"
#: In a butler's data folder: which process serves it, and where (:func:`note_serving`).
SERVING_FILE = "serving.json"


class Install(Protocol):
    """A butler install: its name and its folder (a ButlerConfig, a Glance...)."""

    @property
    def name(self) -> str: ...

    @property
    def config_dir(self) -> Path: ...


@dataclass(frozen=True)
class DataOwner:
    """An install given by hand (the roster dashboard's own token, a test)."""

    name: str
    config_dir: Path


def data_root() -> Path:
    """The folder butler keeps its data in (``BUTLER_DATA_DIR`` overrides)."""
    configured = os.environ.get("BUTLER_DATA_DIR")
    root = Path(configured) if configured else Path(platformdirs.user_data_dir("butler"))
    # Private when created; an existing folder (or parent) keeps the mode its owner gave it.
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    return root


def butler_dir(butler: Install) -> Path:
    """The data folder of one butler install (its token, runtime homes, logs, adapter files).

    ``butlers/<name>/`` for the first install of that name to ask (a folder
    made before folders were claimed is claimed so, keeping its token), else
    ``butlers/<name>-<digest of its folder>/``. A claim whose folder no longer
    exists (moved or deleted) passes to the install asking.
    """
    folder = str(Path(butler.config_dir).expanduser().resolve())
    plain = data_root() / "butlers" / butler.name
    own = plain.with_name(f"{butler.name}-{hashlib.sha256(folder.encode()).hexdigest()[:12]}")
    for path in (plain, own):
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        if _claimed(path, folder):
            return path
    raise AssertionError(f"{own} is claimed by another folder")  # its name is this folder's


def _claimed(path: Path, folder: str) -> bool:
    """Whether ``path`` is (now) the data folder of the install in ``folder``."""
    marker = path / INSTALL_FILE
    note = json.dumps({"folder": folder}) + "\n"
    try:
        write_private(marker, note, how="exclusive")
        return True
    except FileExistsError:
        pass  # claimed already (perhaps a moment ago by another process): whose?
    holder = _holder(marker)
    if holder == folder:
        return True
    if holder is not None and Path(holder).is_dir():
        return False
    replace_private(marker, note)
    log.info("data folder taken over", extra={"path": str(path), "was": holder, "now": folder})
    return True


def _holder(marker: Path) -> str | None:
    """The folder an ``install.json`` names; None when it is unreadable or not ours."""
    holder = read_note(marker).get("folder")
    return holder if isinstance(holder, str) else None


def serving_file(butler: Install) -> Path:
    """Where a butler's daemon notes which process it is and where it serves.

    Read by the roster dashboard (the address), and by ``butler stop``,
    ``restart`` and a second start (the process, :mod:`butler.daemons`).
    """
    return butler_dir(butler) / SERVING_FILE


def note_serving(butler: Install, host: str, port: int, **more: object) -> None:
    """Note in the butler's data folder that this process serves it at ``host:port``.

    Replaced whole, never half-written. What this process noted before (at
    its start: how it was started) is kept; ``more`` adds to it. The state is
    ``serving`` unless ``more`` says otherwise.
    """
    path = serving_file(butler)
    note: dict[str, object] = {}
    earlier = read_note(path)
    if earlier.get("pid") == os.getpid():
        note.update(earlier)
    note.update(host=host, port=port, pid=os.getpid(), process=owner_mark())
    note.update({"state": "serving", "since": time.time(), **more})
    replace_private(path, json.dumps(note))


def forget_serving(butler: Install) -> None:
    """Remove the butler's note if this process wrote it (a stopped daemon's last step)."""
    path = serving_file(butler)
    if read_note(path).get("pid") == os.getpid():
        path.unlink(missing_ok=True)


def read_note(path: Path) -> dict[str, object]:
    """A small JSON note of the data folder as written; ``{}`` when missing or unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as file:
            found = json.loads(file.read(64 * 1024))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}
