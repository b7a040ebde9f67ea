"""Exec a runtime CLI with exactly the environment butler built for it.

Some runtimes are started by a library that merges the daemon's whole
environment into the child's (claude-agent-sdk does). The spawner points
such a library at a tiny executable in the workspace that runs :func:`main`:
it keeps only the variable names listed in ``launch.json`` beside it, makes
itself the leader of a new session (so the whole tree can be killed as one
process group), records its pid, and execs the real CLI. It imports nothing
of butler beyond this module, so it starts fast.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

LAUNCH_FILE = "launch.json"
PID_FILE = "runtime.pid"


def write_launcher(folder: Path, exe: str, keep: list[str]) -> Path:
    """Write ``folder/launch`` (executable) and its ``launch.json``; return the launcher."""
    spec = {"exe": exe, "keep": sorted(set(keep))}
    (folder / LAUNCH_FILE).write_text(json.dumps(spec), encoding="utf-8")
    launcher = folder / "launch"
    launcher.write_text(
        f"#!{sys.executable}\nfrom butler.runtimes.launcher import main\nmain(__file__)\n",
        encoding="utf-8",
    )
    launcher.chmod(0o700)
    return launcher


def main(launcher_path: str) -> None:
    """Entry point of a written launcher: filter the environment, setsid, exec."""
    folder = Path(launcher_path).resolve().parent
    spec = json.loads((folder / LAUNCH_FILE).read_text(encoding="utf-8"))
    env = {k: os.environ[k] for k in spec["keep"] if k in os.environ}
    os.setsid()
    (folder / PID_FILE).write_text(str(os.getpid()), encoding="utf-8")
    exe = spec["exe"]
    os.execve(exe, [exe, *sys.argv[1:]], env)


def read_pid(folder: Path) -> int | None:
    """The pid a launcher in ``folder`` recorded, if it got that far."""
    try:
        return int((folder / PID_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
