"""Where butler keeps its files: one data folder per user, one sub-folder per butler."""

from __future__ import annotations

import json
import os
from pathlib import Path

import platformdirs

from butler.security.private_files import replace_private


def data_root() -> Path:
    """The folder butler keeps its data in (``BUTLER_DATA_DIR`` overrides)."""
    configured = os.environ.get("BUTLER_DATA_DIR")
    root = Path(configured) if configured else Path(platformdirs.user_data_dir("butler"))
    # Private when created; an existing folder (or parent) keeps the mode its owner gave it.
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    return root


def butler_dir(name: str) -> Path:
    """The data folder of one butler (its runtime homes, logs, adapter files)."""
    path = data_root() / "butlers" / name
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def serving_file(name: str) -> Path:
    """Where a running butler notes the address it serves on (read by the roster dashboard)."""
    return butler_dir(name) / "serving.json"


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (one of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def note_serving(name: str, host: str, port: int) -> None:
    """Note in the butler's data folder where it serves (replaced whole, never half-written)."""
    note = {"host": host, "port": port, "pid": os.getpid()}
    replace_private(serving_file(name), json.dumps(note))
