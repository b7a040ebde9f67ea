"""The processes of this machine, found by what their command line names."""

from __future__ import annotations

from pathlib import Path


def processes_naming(token: str) -> list[int]:
    """Host pids whose command line holds ``token``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if token.encode() in cmdline:
            found.append(int(entry.name))
    return found
