"""Start a builder's runtime in its tmux pane with exactly the environment butler built.

tmux runs ``python -I launch.py <spec>``. The spec file, 0600 in the builder's
private folder, holds the runtime's argv and environment (credentials
included), so neither reaches tmux's command line nor its server's
environment. The launcher reads the file, deletes it, adds only the
terminal's own ``TERM`` and ``COLORTERM`` that tmux set, and starts the
runtime as its child. When the runtime ends, the launcher writes how
(``exit.json``: status or signal) beside the spec and exits the same way: the
daemon reads that file rather than rely on tmux, which under load can report
a pane dead before it knows the exit status. Standard library only, and
``-I``: it starts fast and imports nothing from the worktree it starts in.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

SPEC_FILE = "launch.json"
EXIT_FILE = "exit.json"
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


def read_exit(folder: Path) -> dict[str, int | None] | None:
    """How the runtime of the builder in ``folder`` ended, once its launcher wrote it."""
    try:
        return json.loads((folder / EXIT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _record(folder: Path, status: int) -> int:
    """Write how the child ended; return the launcher's own exit code."""
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    (folder / EXIT_FILE).write_text(json.dumps({"status": code, "signal": sig}), encoding="utf-8")
    return code if code is not None else 128 + (sig or 0)


def main(args: list[str]) -> None:
    """Read and delete the spec, run the runtime, record how it ended."""
    spec_path = Path(args[1])
    try:
        spec = json.loads(spec_path.read_text(encoding="utf-8"))
    finally:
        spec_path.unlink(missing_ok=True)
    env = {k: os.environ[k] for k in TERMINAL_VARS if k in os.environ}
    env.update(spec["env"])
    argv = spec["argv"]
    # Terminal keys and a closing terminal are the runtime's business; the launcher
    # stays to record the end, and passes a SIGTERM on.
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    child = os.fork()
    if child == 0:
        for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        try:
            os.execve(argv[0], argv, env)
        except OSError as exc:
            # The pane stays open after exit: a person attaching reads why.
            print(f"butler: cannot start {argv[0]}: {exc.strerror}", file=sys.stderr)
        os._exit(127)
    signal.signal(signal.SIGTERM, lambda *_: os.kill(child, signal.SIGTERM))
    _, status = os.waitpid(child, 0)
    sys.exit(_record(spec_path.parent, status))


if __name__ == "__main__":
    main(sys.argv)
