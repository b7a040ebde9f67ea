"""Start a builder's runtime in its tmux pane with exactly the environment butler built.

tmux runs ``python -I launch.py <spec>``. The spec file, 0600 in the builder's
private folder, holds the runtime's argv and environment (credentials
included), so neither reaches tmux's command line nor its server's
environment. The launcher reads the file, deletes it, adds only the
terminal's own ``TERM`` and ``COLORTERM`` that tmux set, and execs the
runtime. Standard library only, and ``-I``: it starts fast and imports nothing
from the worktree it starts in.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

SPEC_FILE = "launch.json"
#: What the pane's terminal needs; set by tmux, never a secret.
TERMINAL_VARS = ("TERM", "COLORTERM")


def write_spec(folder: Path, argv: list[str], env: dict[str, str]) -> Path:
    """Write the launch spec, readable by this user only; an existing one is an error."""
    path = folder / SPEC_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump({"argv": argv, "env": env}, out)
    return path


def program(spec: Path) -> list[str]:
    """The argv tmux runs: this file under an isolated interpreter."""
    return [sys.executable, "-I", str(Path(__file__).resolve()), str(spec)]


def main(args: list[str]) -> None:
    """Read and delete the spec, then become the runtime."""
    spec_path = Path(args[1])
    try:
        spec = json.loads(spec_path.read_text(encoding="utf-8"))
    finally:
        spec_path.unlink(missing_ok=True)
    env = {k: os.environ[k] for k in TERMINAL_VARS if k in os.environ}
    env.update(spec["env"])
    argv = spec["argv"]
    try:
        os.execve(argv[0], argv, env)
    except OSError as exc:
        # The pane stays open after exit: a person attaching reads why.
        print(f"butler: cannot start {argv[0]}: {exc.strerror}", file=sys.stderr)
        sys.exit(127)


if __name__ == "__main__":
    main(sys.argv)
