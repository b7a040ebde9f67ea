"""What a jailed runtime sees of the file system, and the bubblewrap argv that builds it.

An allow-list: the jail starts from an empty root, so whatever is not named
here (the data folder, the database and its socket, other butlers' homes,
``/root``, ``/run``) is simply absent. The system folders are read-only; the
session's workspace (and, for a builder, its worktree; for a butler, its own
folder) are writable at their own paths; the session's home is writable at
:data:`JAIL_HOME`, whatever its path outside; a few files inside a writable
folder (``butler.toml``) are bound again read-only on top.

What a jail sees of a repository's git folders (never a writable ``.git``
whole) is :mod:`.git_view`'s; a writable folder's ``.git`` may be held
read-only (:attr:`JailPolicy.held`), and :meth:`JailPolicy.guarded` names
the folders where no repository the runtime makes may outlive its jail.

bubblewrap mounts a link given as a bind source where it points, so a
writable folder that is a link (or a builder's worktree whose ``.builders/``
is) is refused in one line (:class:`LinkedFolder`) when the argv is built.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from butler.errors import UserError
from butler.sandbox.bridge_binary import bridge_binary
from butler.sandbox.git_view import (
    BUILDERS_DIR,
    BUTLER_FOLDER_KEEPS,
    WORKTREE_KEEPS,
    git_binds,
    real_dir,
)
from butler.sandbox.installs import installation, never_whole

#: Where the bridge (sandbox/bridge_binary.py) and the egress socket appear inside the jail.
JAIL_RUN = Path("/run/butler")
BRIDGE_PATH = JAIL_RUN / "bridge"
EGRESS_DIR = JAIL_RUN / "egress"
EGRESS_SOCKET = "egress.sock"
#: Where the session's home appears in the jail, whatever its path outside. A runtime
#: stores absolute paths into its home (Codex keeps each transcript's path in its state
#: database), and a resumed session runs in a copy of its parent's home: at one fixed
#: path, what the parent stored stays true in the copy.
JAIL_HOME = Path("/home/butler")
#: The system, read-only. Missing ones are skipped; symlinked ones (merged /usr) stay links.
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
#: Files of /etc a runtime has no business reading, hidden even where /etc is visible.
MASKED_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/sudoers")
#: The PATH of a jail that sees none of the folders of the daemon's own.
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True)
class JailPolicy:
    """Paths bound into a jail: read-only, writable, and read-only again on top of writable."""

    read_only: tuple[Path, ...] = ()
    writable: tuple[Path, ...] = ()
    read_only_over: tuple[Path, ...] = ()
    cwd: Path | None = None
    interactive: bool = False
    #: The folder holding the egress proxy's socket (bound read-only: connecting needs no write).
    egress_dir: Path | None = None
    #: A writable repository's git folder keeps what chooses code read-only (see above);
    #: off only for the daemon's own git, which writes worktrees and config sections.
    guard_git: bool = True
    #: The session's home, bound writable at :data:`JAIL_HOME`.
    home: Path | None = None
    #: Paths inside writable folders held read-only: as they are when real folders, as an
    #: empty read-only folder when missing, so none can be made there (a butler folder's
    #: ``.git``, which the owner's git would obey, and ``.builders/``).
    held: tuple[Path, ...] = ()
    #: ``[butler.sandbox] max_processes`` and ``max_memory_mb``: the bridge holds the jail to them.
    max_processes: int = 512
    max_memory_mb: int = 2048

    def guarded(self) -> list[tuple[Path, tuple[str, ...]]]:
        """The folders where no repository the runtime makes may outlive its jail, each
        with what to keep there (:func:`butler.security.repositories.disarm`): a writable
        folder whose ``.git`` is held (a butler folder: the owner's git runs there), and
        a builder's worktree (the owner merges from it), but their own ``.git``."""
        folders: dict[Path, tuple[str, ...]] = {}
        for path in self.held:
            if path.name == ".git" and path.parent in self.writable:
                folders[path.parent] = BUTLER_FOLDER_KEEPS
        for path in self.writable:
            if path.parent.name == BUILDERS_DIR:
                folders.setdefault(path, WORKTREE_KEEPS)
        return list(folders.items())

    def with_read_only(self, *paths: Path) -> JailPolicy:
        """The same policy, ``paths`` readable too."""
        return replace(self, read_only=(*self.read_only, *paths))

    def sees(self, path: Path) -> bool:
        """Whether the jail shows ``path`` at its own path (the system, or a bound folder)."""
        return _under_system(path) or _under(str(path), self._bound())

    def _bound(self) -> list[str]:
        return [str(b) for b in (*self.read_only, *self.writable, *self.read_only_over)]

    def visible_path(self, search: str) -> str:
        """``search`` (a ``PATH``) without the folders the jail does not show.

        The daemon's ``PATH`` often names folders of a home the jail hides
        (pyenv's shims, cargo's or nvm's bin): there a command would be found
        and fail to start, instead of being found where the jail can run it. A
        folder through a link (a checkout's ``clis`` link) is kept by its real
        path when the jail shows that (an installation bound by its real path).
        """
        # Each folder's text as a Path would have it, against the bound folders' texts,
        # read once: what ``sees`` says, without a Path per folder (44 a session).
        bound = [*_PROGRAM_ROOTS, *self._bound()]
        kept = []
        for folder in search.split(os.pathsep):
            if folder.startswith("/") and not _under(_path_text(folder), bound):
                folder = os.path.realpath(folder)  # a hidden one only: most are shown
            if folder.startswith("/") and _under(_path_text(folder), bound):
                kept.append(folder)
        return os.pathsep.join(dict.fromkeys(kept)) or DEFAULT_PATH


def program_paths(program: str, search: str) -> tuple[str, tuple[Path, ...]]:
    """How the jail starts ``program`` (found on ``search``), and the folders it needs.

    Its folder by its real path: a symlinked folder on the way (a checkout's
    ``node_modules`` link) is not in the jail, only what it points to. The file
    itself by its own name: a virtualenv's ``python`` is a link to the base
    interpreter, and only started by the link's path does it find its
    ``pyvenv.cfg`` and its packages. What it needs is its installation
    (:func:`~butler.sandbox.installs.installation`: its package or virtualenv, and
    what its shebang names); a program that is no link needs its prefix too (a
    ``bin`` folder's parent: a pyenv interpreter's ``lib``, a tool's own tree), a
    link's folder is only its entry points (an npm prefix's, pipx's ``~/.local/bin``).
    """
    located = shutil.which(program, path=search)
    if located is None and "/" not in program:
        return program, ()  # not there: the bridge says so, naming it
    try:
        found = os.stat(located or program)
    except OSError:
        return _program_paths(program, located, search)
    # Asked at every session's jail (half a millisecond of the event loop, a dozen
    # file-system looks): looked at again only when the program or where it is looked
    # for changed, as :func:`~butler.sandbox.installs.script_venvs` reads a script.
    key = (
        program,
        located,
        search,
        os.environ.get("HOME"),
        found.st_dev,
        found.st_ino,
        found.st_mtime_ns,
        found.st_size,
    )
    if key not in _PROGRAMS:
        if len(_PROGRAMS) >= 256:
            _PROGRAMS.clear()
        _PROGRAMS[key] = _program_paths(program, located, search)
    return _PROGRAMS[key]


_PROGRAMS: dict[tuple[object, ...], tuple[str, tuple[Path, ...]]] = {}


def _program_paths(program: str, located: str | None, search: str) -> tuple[str, tuple[Path, ...]]:
    found = Path(os.path.abspath(located or program))
    folder = Path(os.path.realpath(found.parent))
    exe = folder / found.name
    linked = os.path.realpath(exe) != str(exe)
    # A ``bin`` folder's parent is the program's prefix, unless it is a home
    # (``~/bin/tool``) or the like: then only the ``bin`` folder is shown.
    prefix = folder.name == "bin" and not linked and not never_whole(folder.parent)
    own = folder.parent if prefix else folder
    return str(exe), tuple(dict.fromkeys((own, *installation(exe, search))))


@lru_cache(maxsize=1)
def _system_args() -> tuple[str, ...]:
    """How the system's folders are bound: read once per process (about 20 file-system
    looks a session otherwise), the machine's layout (merged ``/usr``) being fixed."""
    args: list[str] = []
    for name in SYSTEM_PATHS:
        path = Path(name)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), name]
        elif path.is_dir():
            args += ["--ro-bind", name, name]
    for name in MASKED_FILES:
        if Path(name).exists():
            args += ["--ro-bind", "/dev/null", name]
    return tuple(args)


#: The system folders a runtime's program may live in (``/etc`` holds none).
_PROGRAM_ROOTS = [s for s in SYSTEM_PATHS if s != "/etc"]


def _under_system(path: Path) -> bool:
    return _under(str(path), _PROGRAM_ROOTS)


@lru_cache(maxsize=256)
def _path_text(folder: str) -> str:
    """``folder``'s text as ``Path`` normalises it (the folders of a ``PATH``, the same at
    every session)."""
    return str(Path(folder))


def _under(path: str, folders: list[str]) -> bool:
    """Whether ``path`` is one of ``folders`` or inside one, compared as a ``Path``'s own
    (normalised) text: what ``Path.is_relative_to`` says, without its parsing, which was
    most of the time a session's jail options took (``sees`` runs for every folder of
    ``PATH``)."""
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def bwrap_argv(policy: JailPolicy, bwrap: str = "bwrap") -> list[str]:
    """The bubblewrap command line for ``policy``; the runtime's argv goes after it.

    New pid, mount, ipc, uts, cgroup and network namespaces; no capabilities;
    killed with its parent; a fresh ``/proc``, a minimal ``/dev``, a private ``/tmp``.
    Outside the terminal case, a new session keeps the runtime off any terminal.
    """
    args = [bwrap, "--unshare-all", "--die-with-parent", "--cap-drop", "ALL"]
    if not policy.interactive:
        args.append("--new-session")
    args += _system_args()
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/var/tmp"]
    args += ["--tmpfs", "/run", "--dir", str(JAIL_RUN)]
    # "-try": a path missing when the jail starts is simply not there (a builder's
    # worktree is named before it is created).
    for path in dict.fromkeys(policy.read_only):
        if not _under_system(path):
            args += ["--ro-bind-try", str(path), str(path)]
    writable = list(dict.fromkeys(policy.writable))
    guarded = [p for p in writable if p.name == ".git"] if policy.guard_git else []
    # Outer folders first, so a held folder lies over its parent and under a writable
    # folder inside it (a builder's worktree in a held ``.builders/``).
    held = [(p, True) for p in dict.fromkeys(policy.held) if p not in writable]
    for path, is_held in sorted([*((p, False) for p in writable), *held], key=_depth):
        if is_held:
            args += _hold(path)
        elif path not in guarded and not (path.name == ".git" and not real_dir(path)):
            _refuse_link(path)
            args += ["--bind-try", str(path), str(path)]
    if policy.guard_git:
        args += git_binds(writable)
    for path in policy.read_only_over:
        args += ["--ro-bind-try", str(path), str(path)]
    args += ["--ro-bind", str(bridge_binary()), str(BRIDGE_PATH)]
    if policy.egress_dir is not None:
        args += ["--ro-bind", str(policy.egress_dir), str(EGRESS_DIR)]
    if policy.home is not None:
        args += ["--bind", str(policy.home), str(JAIL_HOME)]
    if policy.cwd is not None:
        args += ["--chdir", str(policy.cwd)]
    return args


class LinkedFolder(UserError):
    """A folder to be bound writable is a link (bubblewrap would bind where it points)."""


def _depth(entry: tuple[Path, bool]) -> int:
    return len(entry[0].parts)


def _hold(path: Path) -> list[str]:
    """Bind ``path`` read-only, or an empty read-only folder there when it is missing."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        # On a read-only file system (a roster mounted read-only in a container) nothing
        # can be made there, and bubblewrap could not make the mount point either.
        return [] if _read_only(path.parent) else ["--tmpfs", str(path), "--remount-ro", str(path)]
    except OSError:
        return []
    # A link is never bound (it would be followed); a file is held as it is.
    return [] if stat.S_ISLNK(found.st_mode) else ["--ro-bind", str(path), str(path)]


def _read_only(folder: Path) -> bool:
    """Whether ``folder`` is on a file system mounted read-only (or is not there at all)."""
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return True


def _refuse_link(path: Path) -> None:
    """LinkedFolder when ``path`` (or, for a builder's worktree, its ``.builders/``) is a
    link: looked at right before the argv is made, never followed."""
    for place in (path, path.parent) if path.parent.name == BUILDERS_DIR else (path,):
        try:
            linked = stat.S_ISLNK(os.lstat(place).st_mode)
        except OSError:
            continue  # missing: "-try" binds nothing
        if linked:
            raise LinkedFolder(
                f"{place}: is a link, refused as a writable folder of a jail (it would be "
                "bound where it points); expected a real folder: remove the link"
            )
