"""The daemon serving a butler, as other commands see it: found, met twice, stopped, restarted.

A daemon notes in each of its butlers' data folders which process it is
(``serving.json``, :func:`butler.paths.note_serving`), from before its slow
start (the embedded database, the migrations, the start-up checks). So a
second start of the same butler is refused at once, naming the first and the
command that stops it, and so is a start on a port another process holds;
``butler stop`` and ``butler restart`` find the process by the same note. A
note whose process has ended (a daemon killed outright) is not believed: a
process is named by its pid and start time (:mod:`butler.processes`).

A restart is the daemon stopping as on SIGTERM (its sessions drained) and
then starting again in the same process, with the same command line,
environment and terminal: ``butler restart`` leaves a request beside the
note, and the command that started the daemon runs itself again once the
daemon has stopped (:func:`restart_asked`).
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from butler.errors import UserError
from butler.paths import (
    INSTALL_FILE,
    SERVING_FILE,
    Install,
    butler_dir,
    data_root,
    forget_serving,
    note_serving,
    read_note,
    serving_file,
)
from butler.processes import exited, owner_gone, owner_mark
from butler.security.listener import listener_pids
from butler.security.private_files import replace_private

#: Beside a butler's note: the process asked to start again once it has stopped.
RESTART_FILE = "restart.json"
#: How long ``butler stop`` waits: the drain's 30 s, its callers' 5 s, and a margin.
STOP_WAIT_S = 60.0
#: How long ``butler restart`` waits for the daemon to serve again after it stopped.
START_WAIT_S = 180.0
POLL_S = 0.1


class Butler(Install, Protocol):
    """A butler as these checks need it: its name, folder and address (a Glance)."""

    @property
    def host(self) -> str: ...

    @property
    def port(self) -> int: ...


@dataclass(frozen=True)
class Start:
    """How a daemon is started: ``run`` (one butler), or ``up`` of a roster folder."""

    command: str
    roster: Path | None = None

    def other_port(self, butler: Butler) -> str:
        """Where the person chooses another port for ``butler``."""
        if self.command == "run":
            return "--port N (or BUTLER_PORT)"
        return f"[butler] port in {shown(Path(butler.config_dir) / 'butler.toml')}"


@dataclass(frozen=True)
class Daemon:
    """A live process serving a butler, as its note says."""

    pid: int
    #: ``PID.START``: the process, not whichever holds the number later.
    process: str
    host: str
    port: int
    #: ``serving``, or ``starting`` while it opens its database.
    state: str
    since: float
    #: How it was started: ``run``, or ``up`` of ``roster`` with ``butlers``.
    command: str = "run"
    roster: str | None = None
    butlers: tuple[str, ...] = ()
    folder: str | None = None

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}"

    def stop_command(self, folder: Path | str | None) -> str:
        """The command that stops this daemon (a roster's, for ``butler up``)."""
        if self.command == "up" and self.roster:
            return f"butler stop --roster {shown(Path(self.roster))}"
        return f"butler stop -c {shown(Path(folder or self.folder or '.'))}"

    def what(self) -> str:
        """``pid 123, serving http://...``, for a line naming it."""
        since = time.strftime("%H:%M", time.localtime(self.since))
        doing = f"serving {self.url}" if self.state == "serving" else f"starting, for {self.url}"
        served = f", with {', '.join(self.butlers)}" if len(self.butlers) > 1 else ""
        return f"pid {self.pid}, {doing} since {since}, by butler {self.command}{served}"

    def alive(self) -> bool:
        """Whether it still runs (a zombie, ended but not reaped by its parent, does not)."""
        return not owner_gone(self.process) and not exited(self.pid)


def shown(path: Path) -> str:
    """``path`` as a person would type it here: relative to the current folder when under it."""
    full = path.expanduser().resolve()
    try:
        return str(full.relative_to(Path.cwd())) or "."
    except ValueError:
        return str(full)


def daemon_of(butler: Install) -> Daemon | None:
    """The live daemon serving ``butler`` (another process), or None."""
    return _believed(read_note(serving_file(butler)))


def _believed(note: dict[str, object]) -> Daemon | None:
    pid, process, port = note.get("pid"), note.get("process"), note.get("port")
    if not isinstance(pid, int) or pid == os.getpid() or not isinstance(port, int):
        return None
    if not isinstance(process, str) or owner_gone(process) or exited(pid):
        return None
    butlers = note.get("butlers")
    since = note.get("since")
    return Daemon(
        pid=pid,
        process=process,
        host=str(note.get("host") or "127.0.0.1"),
        port=port,
        state=str(note.get("state") or "serving"),
        since=float(since) if isinstance(since, int | float) else time.time(),
        command=str(note.get("command") or "run"),
        roster=note["roster"] if isinstance(note.get("roster"), str) else None,  # type: ignore[arg-type]
        butlers=tuple(str(b) for b in butlers) if isinstance(butlers, list) else (),
        folder=note["folder"] if isinstance(note.get("folder"), str) else None,  # type: ignore[arg-type]
    )


def refuse_a_second_start(butlers: Sequence[Butler], how: Start) -> None:
    """Raise one line when a butler is served already or its port is taken; cheap and quick.

    Done before anything slow, so the person hears it in a fraction of a
    second instead of after the database has started.
    """
    for butler in butlers:
        found = daemon_of(butler)
        if found is not None:
            raise UserError(
                f"{butler.name} is already running ({found.what()}); "
                f"stop it with: {found.stop_command(butler.config_dir)}"
            )
    for butler in butlers:
        trouble = _cannot_listen(butler.host, butler.port)
        if trouble is not None:
            raise UserError(_port_line(butler, trouble, how))


def _cannot_listen(host: str, port: int) -> OSError | None:
    """Why ``host:port`` cannot be listened on now, or None when it can."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the daemon binds
        try:
            sock.bind((host, port))
        except OSError as exc:
            return exc
    return None


def _port_line(butler: Butler, trouble: OSError, how: Start) -> str:
    where = f"{butler.host}:{butler.port}"
    other = how.other_port(butler)
    if trouble.errno != errno.EADDRINUSE:
        return f"{butler.name}: cannot listen on {where}: {trouble.strerror}; choose {other}"
    holder = _butler_on(butler.port)
    if holder is not None:
        name, daemon = holder
        return (
            f"{butler.name}: port {butler.port} is taken by butler {name} ({daemon.what()}); "
            f"stop it with: {daemon.stop_command(None)}, or choose {other}"
        )
    pids = sorted(listener_pids(butler.port))
    if pids:
        holder = f"pid {pids[0]} ({_command_of(pids[0])})"
        return f"{butler.name}: port {butler.port} is taken by {holder}; stop it, or choose {other}"
    return f"{butler.name}: port {butler.port} is taken by another user's process; choose {other}"


def _butler_on(port: int) -> tuple[str, Daemon] | None:
    """The butler of this data folder whose live daemon serves on ``port``."""
    for note in sorted((data_root() / "butlers").glob(f"*/{SERVING_FILE}")):
        found = _believed(read_note(note))
        if found is not None and found.port == port:
            name = read_note(note.parent / INSTALL_FILE).get("folder")
            return (Path(str(name)).name if name else note.parent.name), found
    return None


def _command_of(pid: int) -> str:
    """A process's command line, cut short, for a line naming it."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "a process of yours"
    line = " ".join(a.decode(errors="replace") for a in argv if a)
    return line if len(line) <= 80 else line[:79] + "…"


def note_starting(butlers: Sequence[Butler], how: Start) -> None:
    """Note that this process serves ``butlers`` from now on, before its slow start."""
    names = [b.name for b in butlers]
    roster = str(how.roster.resolve()) if how.roster is not None else None
    for butler in butlers:
        note_serving(
            butler,
            butler.host,
            butler.port,
            state="starting",
            command=how.command,
            roster=roster,
            butlers=names,
            folder=str(Path(butler.config_dir).resolve()),
        )


def forget(butlers: Sequence[Install]) -> None:
    """Remove this process's notes: it serves them no more."""
    for butler in butlers:
        forget_serving(butler)


def signal_daemon(daemon: Daemon, name: str, sig: int = signal.SIGTERM) -> None:
    """Send ``sig`` to the daemon; one line when it is another user's."""
    try:
        os.kill(daemon.pid, sig)
    except ProcessLookupError:
        return  # ended meanwhile: what was wanted
    except PermissionError:
        raise UserError(
            f"{name} is served by pid {daemon.pid}, another user's process: only that user "
            "(or root) can stop it"
        ) from None


def wait_until(done: Callable[[], bool], timeout: float) -> bool:
    """Poll ``done`` until it is true (True) or ``timeout`` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_S)
    return True


def request_restart(butler: Install, daemon: Daemon) -> None:
    """Ask ``daemon`` to start again once it has stopped (read by :func:`restart_asked`)."""
    replace_private(butler_dir(butler) / RESTART_FILE, f'{{"process": "{daemon.process}"}}')


def restart_asked(butlers: Sequence[Install]) -> bool:
    """Whether this process was asked to start again; the request is used up."""
    mine, asked = owner_mark(), False
    for butler in butlers:
        path = butler_dir(butler) / RESTART_FILE
        if read_note(path).get("process") == mine:
            asked = True
            path.unlink(missing_ok=True)
    return asked


def served_again(butler: Install, daemon: Daemon, after: float) -> Daemon | None:
    """The daemon's note once it serves again after ``after``; None while it does not."""
    note = read_note(serving_file(butler))
    since = note.get("since")
    if note.get("process") != daemon.process or note.get("state") != "serving":
        return None
    if not isinstance(since, int | float) or since <= after:
        return None
    return replace(daemon, state="serving", since=float(since))
