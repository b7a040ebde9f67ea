"""One jailed run: the bubblewrap argv around a runtime, its egress proxy, its environment.

:func:`open_jail` is what the session path calls: it starts the session's
egress proxy on a fresh Unix socket and yields a :class:`Jail`, which wraps
any argv (:meth:`Jail.wrap`) and names the variables that send the
runtime's HTTP through the proxy (:meth:`Jail.env`). The proxy closes when
the block ends; what it refused is in :meth:`Jail.summary`.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from butler.sandbox.egress import Egress, Target
from butler.sandbox.hosts import (
    allow_entry,
    loopback_ports,
    model_targets,
    url_targets,
    with_loopback_aliases,
)
from butler.sandbox.policy import (
    BRIDGE_PATH,
    EGRESS_DIR,
    EGRESS_SOCKET,
    JailPolicy,
    bridge_interpreter,
    bwrap_argv,
    install_root,
)
from butler.sandbox.seccomp import filter_program

INSTALL_HINT = "apt-get install bubblewrap (Debian/Ubuntu) or dnf install bubblewrap"
#: The port of the jail's loopback that is its HTTP(S) proxy (any free one would do).
PROXY_PORTS = (3128, 3129, 8888, 18080)
NO_PROXY = "127.0.0.1,localhost,::1"


@lru_cache(maxsize=4)
def probe(bwrap: str = "bwrap") -> str | None:
    """None when a jail can start on this machine, else why it cannot (one line)."""
    exe = shutil.which(bwrap)
    if exe is None:
        return f"bubblewrap ({bwrap}) is not installed; install it: {INSTALL_HINT}"
    argv = [*bwrap_argv(JailPolicy(), exe), "--", "/bin/true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap cannot start a jail here: {exc}"
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["?"]
        return f"bubblewrap cannot start a jail here: {reason[0]}"
    return None


@dataclass(frozen=True)
class Jail:
    """The jail of one run; implements the runtimes' ``Sandbox`` interface."""

    policy: JailPolicy
    egress: Egress
    proxy_port: int
    forwards: tuple[int, ...]
    bwrap: str = "bwrap"

    def env(self) -> dict[str, str]:
        """Variables that send the runtime's HTTP(S) through the jail's proxy."""
        proxy = f"http://127.0.0.1:{self.proxy_port}"
        names = ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY")
        return {
            **dict.fromkeys(names, proxy),
            "NO_PROXY": NO_PROXY,
            "no_proxy": NO_PROXY,
            # Node's own fetch follows the variables above only when asked to.
            "NODE_USE_ENV_PROXY": "1",
        }

    def wrap(
        self, argv: Sequence[str], *, interactive: bool = False, linger: bool = False
    ) -> list[str]:
        """``argv`` run inside the jail, behind the bridge to the proxy.

        The jail's own options (every path it binds, the session's home among
        them) go to bubblewrap through a file (``--args``), not its command
        line, which every local user reads; what is returned is a script that
        starts it, followed by the runtime's own arguments.
        """
        python, prefix = bridge_interpreter()
        # By its real path: a symlinked folder on the way (a checkout's node_modules
        # link) does not exist in the jail, only what it points to.
        exe = os.path.realpath(shutil.which(argv[0]) or argv[0])
        argv = [exe, *argv[1:]]
        policy = self.policy.with_read_only(install_root(exe), prefix)
        policy = replace(policy, interactive=interactive)
        forwards = ",".join(str(p) for p in self.forwards)
        bridge = [python, "-I", "-S", str(BRIDGE_PATH), str(EGRESS_DIR / EGRESS_SOCKET)]
        command = [*bridge, str(self.proxy_port), forwards, *(["linger"] if linger else [])]
        command += ["--", exe]
        return [str(self.launcher(bwrap_argv(policy, self.bwrap)[1:], command)), *argv[1:]]

    def launcher(self, options: list[str], command: list[str]) -> Path:
        """A script running bubblewrap, ``options`` read from a private file, then ``command``.

        ``command`` (the bridge and the runtime's program: paths and ports) and the
        script's own arguments follow on bubblewrap's command line.
        """
        folder = self.egress.socket_path.parent.parent
        name = f"{len(list(folder.glob('run-*')))}-{os.getpid()}"
        redirects = ""
        program = filter_program()
        if program is not None:
            # bubblewrap loads the filter from descriptor 4 before the jail's first process.
            options = [*options, "--seccomp", "4"]
            redirects = f" 4<{shlex.quote(str(_private(folder / f'seccomp-{name}', program)))}"
        args = _private(folder / f"args-{name}", b"".join(o.encode() + b"\0" for o in options))
        script = folder / f"run-{name}"
        quoted = " ".join(shlex.quote(a) for a in [self.bwrap, "--args", "3", "--", *command])
        line = f'exec {quoted} "$@" 3<{shlex.quote(str(args))}{redirects}\n'
        fd = os.open(script, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o700)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write("#!/bin/sh\n" + line)
        return script

    def summary(self) -> dict[str, object]:
        """What the session row records under ``metadata.sandbox``."""
        return {"mode": "bwrap", **self.egress.summary()}

    async def close(self) -> None:
        """Stop the proxy: from now on the jail reaches nothing. Removes its folder."""
        await self.egress.close()
        shutil.rmtree(self.egress.socket_path.parent.parent, ignore_errors=True)


def _private(path: Path, data: bytes) -> Path:
    """A new file only its owner reads, holding ``data``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    return path


def allowed_targets(
    runtime_type: str,
    runtime_env: Mapping[str, str],
    runtime_args: Iterable[str],
    mcp_url: str | None,
    allow_hosts: Iterable[str],
) -> frozenset[Target]:
    """Everything a session's jail may reach: its butler, its model API, the owner's list."""
    targets = model_targets(runtime_type, runtime_env, list(runtime_args))
    if mcp_url:
        targets += url_targets(mcp_url)
    for entry in allow_hosts:
        targets += allow_entry(entry)
    return with_loopback_aliases(targets)


async def start_jail(
    policy: JailPolicy,
    allowed: frozenset[Target],
    *,
    label: str = "",
    bwrap: str = "bwrap",
    folder: Path | None = None,
) -> Jail:
    """Start a jail's egress proxy (in ``folder``, or a fresh private one); close it when done.

    A jail that outlives this call (a builder's terminal session) keeps its
    ``folder``: the proxy can be started again there after a daemon restart,
    and the jail, which sees the folder rather than the socket, reaches it again.
    """
    if folder is None:
        # A Unix socket's path holds at most 107 bytes: a deep TMPDIR gives way to /tmp.
        root = tempfile.gettempdir()
        folder = Path(
            tempfile.mkdtemp(prefix="butler-jail-", dir=root if len(root) < 60 else "/tmp")
        )
    # Only egress/ is seen from the jail; the launch scripts and their args stay outside.
    (folder / "egress").mkdir(mode=0o700, parents=True, exist_ok=True)
    forwards = loopback_ports(allowed)
    proxy_port = next(p for p in PROXY_PORTS if p not in forwards)
    egress = await Egress(folder / "egress" / EGRESS_SOCKET, allowed, label).start()
    policy = replace(policy, egress_dir=folder / "egress")
    return Jail(policy, egress, proxy_port, forwards, shutil.which(bwrap) or bwrap)


@contextlib.asynccontextmanager
async def open_jail(
    policy: JailPolicy,
    allowed: frozenset[Target],
    *,
    label: str = "",
    bwrap: str = "bwrap",
) -> AsyncIterator[Jail]:
    """Start the egress proxy of one run and yield its jail; the proxy ends with the block."""
    jail = await start_jail(policy, allowed, label=label, bwrap=bwrap)
    try:
        yield jail
    finally:
        await jail.close()
