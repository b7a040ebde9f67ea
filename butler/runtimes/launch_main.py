"""The launcher program: start a runtime CLI with exactly the environment butler built.

Runs as ``python -I -S`` (no site-packages, nothing from the environment or the
working folder on ``sys.path``) and imports only ``os``, ``sys`` and
``marshal``, all built into the interpreter: it starts in a few milliseconds,
which every session pays. It reads its spec (written by
:func:`butler.runtimes.launcher.write_launcher`, 0600, in a private folder),
deletes it, keeps only the variable names the spec passes through plus the
values it sets, and then either:

- execs the CLI as the leader of a new session, after recording its pid (so
  the whole tree can be killed as one process group): for runtimes started by
  a library that merges the daemon's whole environment into the child's;
- or runs it as a child and records how it ended (``exit.json``) before
  exiting the same way: for a builder's pane, where tmux may report a pane
  dead before it knows the exit status.
"""

import marshal
import os
import sys

PID_FILE = "runtime.pid"
EXIT_FILE = "exit.json"
#: Seconds a runtime has to end once its terminal is gone before its group is killed.
HANGUP_GRACE_S = 5
#: Set once the terminal hung up: whatever of the group is left goes with the launcher.
_HUNG_UP: list[bool] = []


def main(spec_path: str, args: list[str]) -> None:
    """Read and delete the spec, then exec or supervise the runtime."""
    try:
        with open(spec_path, "rb") as spec_file:
            # marshal, not json: json pulls in `re`, the bulk of a bare start. The spec
            # is this user's own private file, written by the same interpreter version.
            spec = marshal.load(spec_file)
    finally:
        os.unlink(spec_path)
    env = {k: os.environ[k] for k in spec["pass"] if k in os.environ}
    env.update(spec["env"])
    argv = [*spec["argv"], *args]
    folder = os.path.dirname(spec_path)
    if spec["supervise"]:
        _supervise(folder, argv, env)
    os.setsid()
    with open(os.path.join(folder, PID_FILE), "w", encoding="utf-8") as pid_file:
        pid_file.write(str(os.getpid()))
    _exec(argv, env)


def _exec(argv: list[str], env: dict[str, str]) -> None:
    try:
        os.execve(argv[0], argv, env)
    except OSError as exc:
        print(f"butler: cannot start {argv[0]}: {exc.strerror}", file=sys.stderr)
    os._exit(127)


def _hung_up() -> None:
    """The terminal is gone (its tmux session or server killed). Some TUIs outlive a
    hangup; the whole group gets SIGTERM, then SIGKILL after HANGUP_GRACE_S."""
    import signal  # loaded already by _supervise

    _HUNG_UP.append(True)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGALRM, lambda *_: os.killpg(0, signal.SIGKILL))
    signal.alarm(HANGUP_GRACE_S)
    os.killpg(0, signal.SIGTERM)  # the launcher's own handler passes it to the runtime


def _supervise(folder: str, argv: list[str], env: dict[str, str]) -> None:
    import signal

    # Terminal keys are the runtime's business; the launcher stays to record the end,
    # passes a SIGTERM on, and ends the group when the terminal hangs up.
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    child = os.fork()
    if child == 0:
        for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        _exec(argv, env)  # on failure the pane stays open: a person attaching reads why
    signal.signal(signal.SIGTERM, lambda *_: os.kill(child, signal.SIGTERM))
    signal.signal(signal.SIGHUP, lambda *_: _hung_up())
    _, status = os.waitpid(child, 0)
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    record = '{"status": %s, "signal": %s}' % (  # noqa: UP031 (no json here, see above)
        "null" if code is None else code,
        "null" if sig is None else sig,
    )
    with open(os.path.join(folder, EXIT_FILE), "w", encoding="utf-8") as out:
        out.write(record)
    if _HUNG_UP:  # the runtime ended, but no process of its may outlive its terminal
        os.killpg(0, signal.SIGKILL)
    sys.exit(code if code is not None else 128 + (sig or 0))
