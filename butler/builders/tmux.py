"""Builders' tmux sessions, on a tmux server of butler's own.

Every command is an argv list; a session's program is given as several
arguments, which tmux execs without a shell. tmux runs with a minimal
environment, so a server butler starts holds none of the daemon's variables
(a program in a pane could otherwise read them with ``show-environment``).
Panes stay after their program exits (``remain-on-exit``), so the daemon can
read the exit status and a person can still read the last screen.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from dataclasses import dataclass

from butler.errors import ButlerError, UserError

#: The tmux server (``tmux -L <socket>``) builders live on; BUTLER_TMUX_SOCKET overrides.
DEFAULT_SOCKET = "butler"
#: A detached session has no client to size it; wide enough for a TUI to lay out.
WIDTH, HEIGHT = 200, 50


def socket_name() -> str:
    return os.environ.get("BUTLER_TMUX_SOCKET") or DEFAULT_SOCKET


def tmux_env() -> dict[str, str]:
    """The only variables a tmux client (and a server it starts) gets."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    if os.environ.get("TMUX_TMPDIR"):
        env["TMUX_TMPDIR"] = os.environ["TMUX_TMPDIR"]
    return env


def _number(text: str) -> int | None:
    return int(text) if text.isdigit() else None


def session_name(butler: str, builder_id: str) -> str:
    return f"{butler}-{builder_id}"


@dataclass(frozen=True)
class PaneState:
    """A session's first pane: whether its program ended, and how."""

    dead: bool
    exit_status: int | None
    signal: int | None = None

    @property
    def ended(self) -> bool:
        """Dead with its exit known: tmux closes the pane's terminal before it reaps the
        program, so for a moment a pane is dead with neither status nor signal."""
        return self.dead and (self.exit_status is not None or self.signal is not None)

    def record(self) -> dict[str, int | None]:
        """How the pane's program ended, in the launcher's exit-record shape."""
        return {"status": self.exit_status, "signal": self.signal}


class TmuxError(ButlerError):
    """A tmux command failed."""


class Tmux:
    """One tmux server, by socket name."""

    def __init__(self, socket: str | None = None) -> None:
        self.socket = socket or socket_name()

    def argv(self, *args: str) -> list[str]:
        return ["tmux", "-L", self.socket, *args]

    async def run(
        self, *args: str, check: bool = True, stdin: bytes | None = None
    ) -> tuple[int, str]:
        if shutil.which("tmux") is None:
            raise UserError("tmux not found on PATH; builders run in tmux (apt-get install tmux)")
        proc = await asyncio.create_subprocess_exec(
            *self.argv(*args),
            stdin=asyncio.subprocess.DEVNULL if stdin is None else asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=tmux_env(),
        )
        out, err = await proc.communicate(stdin)
        if check and proc.returncode != 0:
            raise TmuxError(f"tmux {args[0]}: {err.decode(errors='replace').strip()}")
        return proc.returncode or 0, out.decode(errors="replace")

    async def new_session(self, name: str, cwd: str, program: list[str]) -> None:
        """A detached session running ``program`` (exec'd, no shell) whose pane outlives it."""
        size = ["-x", str(WIDTH), "-y", str(HEIGHT)]
        # In the same command list, so it holds before the program can exit.
        keep_pane = [";", "set-option", "-t", name, "remain-on-exit", "on"]
        await self.run(
            "new-session", "-d", "-s", name, "-c", cwd, *size, "--", *program, *keep_pane
        )

    async def panes(self) -> dict[str, PaneState]:
        """Every session of the server and the state of its first pane ({} without a server)."""
        fmt = (
            "#{session_name}\t#{pane_index}\t#{pane_dead}\t#{pane_dead_status}\t#{pane_dead_signal}"
        )
        status, out = await self.run("list-panes", "-a", "-F", fmt, check=False)
        if status != 0:
            return {}
        states: dict[str, PaneState] = {}
        for line in out.splitlines():
            name, index, dead, code, signal = [*line.split("\t"), "", "", "", ""][:5]
            if index == "0" or name not in states:
                states[name] = PaneState(dead == "1", _number(code), _number(signal))
        return states

    async def capture(self, name: str, history: int = 0) -> str:
        """The text on the pane's screen (and ``history`` lines above it), wrapped lines joined."""
        start = ["-S", str(-history)] if history else []
        status, out = await self.run(
            "capture-pane", "-p", "-J", *start, "-t", f"={name}:", check=False
        )
        return out.rstrip() if status == 0 else ""

    async def paste(self, name: str, text: str) -> None:
        """Paste ``text`` into the session's pane as a person's terminal would (bracketed).

        The text reaches tmux on the client's stdin, never in an argument; the
        buffer is deleted once pasted.
        """
        buffer = f"butler-{name}"
        await self.run("load-buffer", "-b", buffer, "-", stdin=text.encode())
        await self.run("paste-buffer", "-p", "-d", "-b", buffer, "-t", f"={name}:")

    async def keys(self, name: str, *keys: str) -> None:
        """Press keys (tmux key names such as ``Enter``) in the session's pane."""
        await self.run("send-keys", "-t", f"={name}:", *keys)

    async def pane_pid(self, name: str) -> int | None:
        """The pid of the program the session's pane runs (the launcher), if it still runs."""
        status, out = await self.run(
            "display-message", "-p", "-t", f"={name}:", "#{pane_dead} #{pane_pid}", check=False
        )
        dead, _, pid = out.strip().partition(" ")
        return int(pid) if status == 0 and dead == "0" and pid.isdigit() else None

    async def kill(self, name: str) -> bool:
        status, _ = await self.run("kill-session", "-t", f"={name}", check=False)
        return status == 0

    def attach_argv(self, name: str) -> list[str]:
        return self.argv("attach-session", "-t", f"={name}")
