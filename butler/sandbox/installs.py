"""Where a program is installed: the folders a jail binds read-only so that it runs there.

Users install agent CLIs and tools inside their home, which the jail hides: nvm
(``~/.nvm/versions/node/vX/bin/cli``, a link into ``lib/node_modules/<pkg>``, beside
the ``node`` it runs with), a project's ``node_modules/.bin`` (links into the
package), ``npm install -g`` with a prefix of ``~/.npm-global``, pipx (``~/.local/bin``
links into ``~/.local/pipx/venvs/<pkg>``), a virtualenv's console script or a script
whose shebang names a virtualenv's ``python``. Found by the daemon there, each would
be found nowhere in the jail. :func:`installation` names the smallest folders that
hold one: the folder of its entry point, its package (not the whole
``node_modules`` of a global prefix, which holds every other global package), its
virtualenv and that virtualenv's base interpreter, and the interpreter its shebang
names, each by its real path. Never a home: a folder that is one is left out.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

#: How far an interpreter's own interpreter is followed (a script run by a venv's
#: console script run by a wrapper...): each step is one file read.
_DEPTH = 4
#: How much of a script is read for its shebang and, in a shell wrapper, the
#: virtualenv programs it starts.
_HEAD = 64 * 1024
#: Interpreters whose scripts are read for the absolute paths of programs they start.
_SHELLS = {"sh", "bash", "dash", "zsh", "ksh"}
#: Where no virtualenv lives (skipped unread when a wrapper names them).
_SYSTEM = ("/usr/", "/bin/", "/sbin/", "/lib/", "/etc/")
_ABSOLUTE = re.compile(r"(?<![\w./-])(/[\w.@+-]+(?:/[\w.@+-]+)+)")


def installation(found: Path, search: str) -> tuple[Path, ...]:
    """The folders ``found`` (an executable, perhaps a link) needs to run: its entry
    point's folder, its package or prefix, and its interpreter's (looked up on
    ``search`` when its shebang is ``/usr/bin/env <name>``)."""
    folders: list[Path] = [Path(os.path.realpath(found.parent))]
    _add_venv(found, folders)
    _add(Path(os.path.realpath(found)), search, folders, _DEPTH)
    homes = _homes()
    return tuple(f for f in dict.fromkeys(folders) if f not in homes)


def known(found: Path) -> bool:
    """Whether the extent of ``found``'s installation is known: a package in a
    ``node_modules``, a program of a virtualenv, or a binary (its prefix). Not a
    script elsewhere: a pyenv shim runs pyenv's whole tree, which a PATH lookup
    should skip for the system's program rather than bind."""
    real = Path(os.path.realpath(found))
    in_modules = any(p.name == "node_modules" for p in real.parents)
    return (
        in_modules
        or virtualenv(found) is not None
        or virtualenv(real) is not None
        or (real.is_file() and _shebang(real) is None)
    )


def script_venvs(script: Path) -> tuple[Path, ...]:
    """The virtualenvs (each with its base interpreter's prefix) that ``script``
    starts: its shebang's ``python``, or a shell wrapper's virtualenv programs.

    Only virtualenvs, and only by absolute path: a skill's script is one a session
    may write, and what it names must not choose any other folder for a jail.
    """
    try:
        found = os.stat(script)
    except OSError:
        return ()
    # Read at every session's jail: each script is read again only when it changed.
    key = (str(script), found.st_ino, found.st_mtime_ns, found.st_size)
    if key not in _VENVS:
        if len(_VENVS) >= 4096:
            _VENVS.clear()
        folders: list[Path] = []
        for program in _started_by(Path(os.path.realpath(script)), ""):
            _add_venv(program, folders)
        homes = _homes()
        _VENVS[key] = tuple(f for f in dict.fromkeys(folders) if f not in homes)
    return _VENVS[key]


_VENVS: dict[tuple[str, int, int, int], tuple[Path, ...]] = {}


def scripts(folder: Path, limit: int = 500, depth: int = 4) -> list[Path]:
    """The executable files under ``folder`` (a butler's ``skills/``), not links, at
    most ``limit`` of them, ``depth`` folders deep (read at every session's jail)."""
    found: list[Path] = []
    pending = [(str(folder), depth)]
    while pending and len(found) < limit:
        where, left = pending.pop()
        try:
            entries = list(os.scandir(where))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if left > 1 and not entry.name.startswith(".") and entry.name != "node_modules":
                    pending.append((entry.path, left - 1))
            elif entry.is_file(follow_symlinks=False) and entry.stat().st_mode & 0o111:
                found.append(Path(entry.path))
    return found[:limit]


def package(real: Path) -> Path:
    """The folder holding the installation of the file ``real`` (a real path).

    In a ``node_modules``: a project's outermost one (its packages load their
    hoisted siblings), a global prefix's (``<prefix>/lib/node_modules``) package
    alone (npm nests a global package's dependencies inside it). In a virtualenv:
    the virtualenv.
    A binary in a ``bin`` folder with a ``lib`` beside: its prefix (an interpreter
    loads its library from there). Anything else: its folder.
    """
    modules = [p for p in real.parents if p.name == "node_modules"]
    if modules:
        top = modules[-1]
        if top.parent.name != "lib":
            return top
        inner = real.relative_to(top).parts
        depth = 2 if inner[0].startswith("@") and len(inner) > 2 else 1
        return top.joinpath(*inner[:depth]) if len(inner) > depth else top
    venv = virtualenv(real)
    if venv is not None:
        return venv
    prefix = real.parent.parent
    if real.parent.name == "bin" and (prefix / "lib").is_dir() and _shebang(real) is None:
        return prefix  # an interpreter's (nvm's node, pyenv's python): its lib beside
    return real.parent  # a standalone binary (~/.cargo/bin's, beside cargo's token)


def virtualenv(path: Path) -> Path | None:
    """The virtualenv ``path`` (a file or its unresolved name) belongs to, if any."""
    for folder in (path.parent.parent, path.parent):
        if (folder / "pyvenv.cfg").is_file():
            return folder
    return None


def base_interpreter(venv: Path) -> Path | None:
    """The folder of the interpreter ``venv`` was made from (``home`` in its ``pyvenv.cfg``)."""
    try:
        lines = (venv / "pyvenv.cfg").read_text(errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip().startswith("/"):
            folder = Path(os.path.realpath(value.strip()))
            # Only a folder that holds a python: a session can write a pyvenv.cfg in
            # its own folders, naming any folder (~/.ssh) for the next jail to bind.
            pythons = (folder / name for name in ("python3", "python"))
            return folder if any(os.access(p, os.X_OK) and p.is_file() for p in pythons) else None
    return None


def _add(real: Path, search: str, folders: list[Path], depth: int) -> None:
    """Add the installation of the file ``real`` and of what starts it to ``folders``."""
    if depth <= 0 or not real.is_file():
        return
    folders.append(package(real))
    _add_venv(real, folders)
    for program in _started_by(real, search):
        # A virtualenv's python is a link: its venv by the link's name, the base by its target.
        _add_venv(program, folders)
        _add(Path(os.path.realpath(program)), search, folders, depth - 1)


def _add_venv(path: Path, folders: list[Path]) -> None:
    """Add the virtualenv ``path`` (by its own name) is in, and its base interpreter's prefix."""
    venv = virtualenv(path)
    if venv is None:
        return
    folders.append(Path(os.path.realpath(venv)))
    base = base_interpreter(venv)
    if base is not None:
        folders.append(base.parent if base.name == "bin" else base)


def _started_by(script: Path, search: str) -> list[Path]:
    """The programs that run ``script``: its shebang's interpreter (found on ``search``
    for ``/usr/bin/env <name>``) and, for a shell script, the virtualenv programs it names."""
    line = _shebang(script)
    if line is None:
        return []
    words = line.split()
    if not words:
        return []
    first = words[0]
    if Path(first).name == "env":
        named = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        found = shutil.which(named[0], path=search) if named else None
        programs = [Path(found)] if found else []
    else:
        programs = [Path(first)]
    if programs and Path(programs[0]).name in _SHELLS:
        programs += _venv_programs(script)
    return programs


def _venv_programs(script: Path) -> list[Path]:
    """The executables inside a virtualenv that a shell script names by absolute path."""
    try:
        text = script.read_bytes()[:_HEAD].decode(errors="replace")
    except OSError:
        return []
    # A program of a virtualenv is in its bin/ (Scripts/ is Windows'); the system has none.
    named = dict.fromkeys(
        Path(m) for m in _ABSOLUTE.findall(text) if "/bin/" in m and not m.startswith(_SYSTEM)
    )
    return [
        p
        for p in named
        if p.is_file() and os.access(p, os.X_OK) and virtualenv(p) is not None and p != script
    ]


def _shebang(path: Path) -> str | None:
    """The interpreter line of the script ``path`` (without ``#!``), or None."""
    try:
        with open(path, "rb") as file:
            head = file.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    return head[2:].split(b"\n", 1)[0].decode(errors="replace").strip()


def never_whole(folder: Path) -> bool:
    """Whether ``folder`` is one the jail never shows whole (a home, ``/tmp``, ``/``...)."""
    return folder in _homes()


def _homes() -> set[Path]:
    """Folders never bound whole: the daemon's home, its ``~/.local`` (``share/``
    holds keyrings and tokens), the folder of homes, and the jail's own mounts
    (a host ``/tmp`` bound over the jail's private one)."""
    home = Path(os.path.realpath(os.path.expanduser("~")))
    return {home, home / ".local", home.parent, *map(Path, _NEVER)}


_NEVER = ("/", "/tmp", "/var", "/var/tmp", "/run", "/proc", "/dev", "/home", "/root")
