"""One jailed run: the bubblewrap argv around a runtime, its egress proxy, its environment.

:func:`open_jail` is what the session path calls: it starts the session's
egress proxy on a fresh Unix socket and yields a :class:`Jail`, which wraps
any argv (:meth:`Jail.wrap`) and names the variables that send the
runtime's HTTP through the proxy (:meth:`Jail.env`). The proxy closes when
the block ends; what it refused is in :meth:`Jail.summary`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

import butler.sandbox.cgroups as cgroups
from butler.sandbox.bridge_binary import BridgeMissing, bridge_binary
from butler.sandbox.container import container_hint
from butler.sandbox.egress import ALLOW_SETTING, Egress, Target
from butler.sandbox.folders import new_jail_folder
from butler.sandbox.hosts import (
    loopback_ports,
)
from butler.sandbox.leftovers import look_after
from butler.sandbox.policy import (
    BRIDGE_PATH,
    EGRESS_DIR,
    EGRESS_SOCKET,
    JAIL_HOME,
    JailPolicy,
    bwrap_argv,
    program_paths,
)
from butler.sandbox.seccomp import filter_program
from butler.security.private_files import write_private
from butler.security.repositories import Look

#: Numbers the launch scripts of this process's jails (see :func:`run_name`).
_RUNS = itertools.count()
#: A variable name the shell can unset or expand.
SHELL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: util-linux's setsid: the script's pid leads a new session (no fork: it leads no group yet).
SETSID = shutil.which("setsid") or "setsid"
INSTALL_HINT = "apt-get install bubblewrap (Debian/Ubuntu) or dnf install bubblewrap"
#: The port of the jail's loopback that is its HTTP(S) proxy (any free one would do).
PROXY_PORTS = (3128, 3129, 8888, 18080)
NO_PROXY = "127.0.0.1,localhost,::1"
#: The descriptors a launch script hands the bridge when the session has a cgroup: its
#: ``cgroup.procs``, then each event file of :data:`cgroups.EVENTS` (3 and 4 are bubblewrap's
#: options and seccomp filter).
CGROUP_FDS = (5, 6, 7)


def run_name() -> str:
    """A name no other launch script of this process's jails has: ``N-PID``.

    The warm-jail pool (sandbox/pool.py) writes a taken jail's own launch script and
    environment file into the same folder as the launch script of the session's own
    jail (:meth:`Jail.launcher`), each created exclusively: one count for both keeps
    their names apart.
    """
    return f"{next(_RUNS)}-{os.getpid()}"


@lru_cache(maxsize=4)
def probe(bwrap: str = "bwrap") -> str | None:
    """None when a jail can start on this machine, else why it cannot (one line)."""
    exe = shutil.which(bwrap)
    if exe is None:
        return f"bubblewrap ({bwrap}) is not installed; install it: {INSTALL_HINT}"
    try:
        argv = [*bwrap_argv(JailPolicy(), exe), "--", "/bin/true"]
    except BridgeMissing as exc:
        return str(exc)
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap cannot start a jail here: {exc}"
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["?"]
        return f"bubblewrap cannot start a jail here: {reason[0]}{container_hint(reason[0])}"
    return None


@dataclass(frozen=True)
class Jail:
    """The jail of one run; implements the runtimes' ``Sandbox`` interface."""

    policy: JailPolicy
    egress: Egress
    proxy_port: int
    forwards: tuple[int, ...]
    bwrap: str = "bwrap"
    #: The session's cgroup, which holds its bounds (sandbox/cgroups.py); None: the
    #: bridge's watcher holds them.
    cgroup: Path | None = None
    #: The programs :meth:`wrap_exact` started in it: what a pool learns to make jails for.
    programs: list[str] = field(default_factory=list, compare=False)
    #: What the looks at its end found in the folders it guards (:meth:`disarm_left`).
    left: list[Look] = field(default_factory=list, compare=False)

    def env(self, search: str | None = None) -> dict[str, str]:
        """Variables that send the runtime's HTTP(S) through the jail's proxy.

        With ``search`` (the runtime's ``PATH``), its ``PATH`` too: only the
        folders of ``search`` the jail shows.
        """
        proxy = f"http://127.0.0.1:{self.proxy_port}"
        names = ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY")
        path = {} if search is None else {"PATH": self.policy.visible_path(search)}
        return {
            **dict.fromkeys(names, proxy),
            "NO_PROXY": NO_PROXY,
            "no_proxy": NO_PROXY,
            # Node's own fetch follows the variables above only when asked to.
            "NODE_USE_ENV_PROXY": "1",
            **path,
        }

    def inside(self, text: str) -> str:
        """``text`` (an argument, a variable's value) naming the home where the jail shows it."""
        home = None if self.policy.home is None else str(self.policy.home)
        if home is None or home not in text:  # most values: no pattern to run
            return text
        return _home_pattern(home).sub(str(JAIL_HOME), text)

    def wrap(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        interactive: bool = False,
        linger: bool = False,
    ) -> list[str]:
        """``argv`` run inside the jail, behind the bridge to the proxy.

        The jail's own options (every path it binds, the session's home among
        them) go to bubblewrap through a file (``--args``), not its command
        line, which every local user reads; what is returned is a script that
        starts it, followed by the runtime's own arguments. Variables of
        ``env`` (the runtime's environment) that name the session's home are
        set again there, naming it where the jail shows it.
        """
        options, command = self.bridged(argv[0], interactive=interactive, linger=linger)
        moved = {k: inside for k, v in (env or {}).items() if (inside := self.inside(v)) != v}
        options += [part for k, v in moved.items() for part in ("--setenv", k, v)]
        return [str(self.launcher(options, command)), *map(self.inside, argv[1:])]

    def wrap_exact(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        passthrough: Iterable[str],
        pid_file: Path,
    ) -> list[str]:
        """``argv`` in the jail with exactly ``env``, plus ``passthrough`` names the caller sets.

        For a runtime started by a library that merges the daemon's whole
        environment into its child's (claude-agent-sdk): the script unsets the
        daemon's variables, bubblewrap starts the jail with a cleared
        environment and ``env`` (from the private options file), and the
        ``passthrough`` variables the library set are appended to that file by
        the shell, never put on a command line. The script records its pid in
        ``pid_file`` and leads a new session, so that pid ends the whole run.
        This does in the jail's launch script what the launcher would do in a
        Python process of its own, which every session would pay for.
        """
        self.programs.append(argv[0])
        options, command = self.bridged(argv[0])
        pairs = [part for k, v in env.items() for part in ("--setenv", k, self.inside(v))]
        options = ["--clearenv", *pairs, *options]
        kept = {*env, *passthrough}
        drop = sorted(
            n for n in os.environ if n not in kept and n != "args" and SHELL_NAME.match(n)
        )
        lines = [f"unset {' '.join(drop)}"] if drop else []
        # $args is the options file (see launcher): the shell's builtin printf appends.
        appends = [
            f'[ -n "${{{n}+x}}" ] && printf \'%s\\0%s\\0%s\\0\' --setenv {n} "${n}" >> "$args"'
            for n in sorted(set(passthrough) - set(env))
            if SHELL_NAME.match(n)
        ]
        lines += [*appends, f"echo $$ > {shlex.quote(str(pid_file))}"]
        script = self.launcher(options, command, lines, setsid=True)
        return [str(script), *map(self.inside, argv[1:])]

    def bridged(
        self,
        program: str,
        *,
        interactive: bool = False,
        linger: bool = False,
        cgroup_fds: tuple[int, ...] = CGROUP_FDS,
    ) -> tuple[list[str], list[str]]:
        """bubblewrap's options for ``program``, and its command: the bridge, then it.

        Apart rather than in a launch script (:meth:`launcher`) for the warm-jail pool
        (sandbox/pool.py), which starts bubblewrap itself: the options through a memfd,
        the command with the bridge told to wait for its session (``warm=``) in place of
        the runtime's arguments. With a cgroup, the bridge is told the descriptors of its
        ``cgroup.procs`` and event files (``cgroup_fds``, opened by whoever starts
        bubblewrap: :meth:`launcher`, or the pool).
        """
        search = self.policy.visible_path(os.environ.get("PATH", ""))
        exe, roots = program_paths(program, search)
        policy = self.policy.with_read_only(*roots)
        policy = replace(policy, interactive=interactive)
        forwards = ",".join(str(p) for p in self.forwards)
        # The bridge is the jail's init: it reaps what the runtime leaves (bridge_init.c).
        options = ["--as-pid-1", *bwrap_argv(policy, self.bwrap)[1:]]
        bounds = f"limits={policy.max_processes},{policy.max_memory_mb}"
        extra = [bounds, *(["linger"] if linger else [])]
        if self.cgroup is not None:
            procs, *events = cgroup_fds
            extra.append(f"cgroup={procs}")
            for fd, (_, key, bound) in zip(events, cgroups.EVENTS, strict=True):
                extra.append(f"watch={fd}:{key}:{bound}")
        socket = str(EGRESS_DIR / EGRESS_SOCKET)
        return options, [
            str(BRIDGE_PATH),
            socket,
            str(self.proxy_port),
            forwards,
            *extra,
            "--",
            exe,
        ]

    def launcher(
        self,
        options: list[str],
        command: list[str],
        lines: Sequence[str] = (),
        *,
        setsid: bool = False,
    ) -> Path:
        """A script running bubblewrap, ``options`` read from a private file, then ``command``.

        ``command`` (the bridge and the runtime's program: paths and ports) and the
        script's own arguments follow on bubblewrap's command line; ``lines`` run
        before it, with the options file's path in ``$args``.
        """
        folder = self.egress.socket_path.parent.parent
        script = folder / f"run-{run_name()}"
        redirects = ""
        program = filter_program()
        if program is not None:
            # bubblewrap loads the filter from descriptor 4 before the jail's first process.
            options = [*options, "--seccomp", "4"]
            seccomp = write_private(
                script.with_name(script.name + ".bpf"), program, how="exclusive"
            )
            redirects = f" 4<{shlex.quote(str(seccomp))}"
        args = script.with_name(script.name + ".args")
        write_private(args, b"".join(o.encode() + b"\0" for o in options), how="exclusive")
        if self.cgroup is not None:
            # The bridge's way into the session's cgroup and the files it waits on, opened
            # here, outside the jail (bridge_cgroup.c).
            files = ["cgroup.procs", *(name for name, _, _ in cgroups.EVENTS)]
            modes = [">>", *("<" for _ in cgroups.EVENTS)]
            redirects += "".join(
                f" {fd}{mode}{shlex.quote(str(self.cgroup / name))}"
                for fd, mode, name in zip(CGROUP_FDS, modes, files, strict=True)
            )
        start = [*([SETSID] if setsid else []), self.bwrap, "--args", "3", "--", *command]
        quoted = " ".join(shlex.quote(a) for a in start)
        body = "".join(line + "\n" for line in [f"args={shlex.quote(str(args))}", *lines])
        body += f'exec {quoted} "$@" 3<"$args"{redirects}\n'
        return write_private(script, "#!/bin/sh\n" + body, how="exclusive", executable=True)

    @property
    def noteworthy(self) -> bool:
        """Whether its summary says more than that it ran: refusals, trouble, leftovers."""
        return bool(self.egress.blocked or self.egress.trouble or self.left)

    def summary(self) -> dict[str, object]:
        """What the session row records under ``metadata.sandbox``: what the proxy refused,
        and the repositories the runtime left that were disarmed (``disarmed``) or could
        not be, or not all looked at (``not_disarmed``)."""
        disarmed = [d.to_dict() for look in self.left for d in look.disarmed]
        missed = [line for look in self.left for line in look.lines() if "renamed to" not in line]
        extra = {"disarmed": disarmed} if disarmed else {}
        extra |= {"not_disarmed": missed} if missed else {}
        return {"mode": "bwrap", **self.egress.summary(), **extra}

    async def disarm_left(self) -> None:
        """Disarm every repository the runtime left where the owner's git runs (the
        folders :meth:`JailPolicy.guarded` names); what was found is kept in :attr:`left`
        and logged, one line each. Call it once the jail's runtime has ended."""
        for folder, keep in self.policy.guarded():
            look = await look_after(folder, keep, f"left by jail {self.egress.label or '?'}")
            if look is not None and look.noteworthy:
                self.left.append(look)

    async def close(self) -> None:
        """Stop the proxy: from now on the jail reaches nothing. Removes its folder, and
        disarms the repositories its runtime left (:meth:`disarm_left`).

        The removal runs in a thread: removing a folder the jail's mount namespace
        held takes milliseconds while the kernel tears that namespace down, time
        the event loop (every other session and tool call) should not wait.
        """
        try:
            await self.egress.close()
        finally:
            folder = self.egress.socket_path.parent.parent
            await asyncio.to_thread(shutil.rmtree, folder, ignore_errors=True)
            if self.cgroup is not None:
                await asyncio.to_thread(cgroups.remove, self.cgroup)
            await self.disarm_left()


@lru_cache(maxsize=64)
def _home_pattern(home: str) -> re.Pattern[str]:
    """``home`` as a whole path or the head of one (not the head of a longer name)."""
    return re.compile(re.escape(home) + r"(?![\w.-])")


async def start_jail(
    policy: JailPolicy,
    allowed: frozenset[Target],
    *,
    label: str = "",
    bwrap: str = "bwrap",
    folder: Path | None = None,
    setting: str = ALLOW_SETTING,
) -> Jail:
    """Start a jail's egress proxy (in ``folder``, or a fresh private one); close it when done.

    A jail that outlives this call (a builder's terminal session) keeps its
    ``folder``: the proxy can be started again there after a daemon restart,
    and the jail, which sees the folder rather than the socket, reaches it again.
    """
    bridge_binary()  # a stale or missing bridge is refused before anything starts
    if folder is None:
        folder = new_jail_folder()
    # Only egress/ is seen from the jail; the launch scripts and their args stay outside.
    (folder / "egress").mkdir(mode=0o700, parents=True, exist_ok=True)
    forwards = loopback_ports(allowed)
    proxy_port = next(p for p in PROXY_PORTS if p not in forwards)
    held = cgroups.session_cgroups().parent
    cgroup = (
        None if held is None else cgroups.make(held, policy.max_processes, policy.max_memory_mb)
    )
    try:
        egress = await Egress(folder / "egress" / EGRESS_SOCKET, allowed, label, setting).start()
    except BaseException:
        if cgroup is not None:
            cgroups.remove(cgroup)
        raise
    policy = replace(policy, egress_dir=folder / "egress")
    return Jail(policy, egress, proxy_port, forwards, shutil.which(bwrap) or bwrap, cgroup)


@contextlib.asynccontextmanager
async def open_jail(
    policy: JailPolicy,
    allowed: frozenset[Target],
    *,
    label: str = "",
    bwrap: str = "bwrap",
    setting: str = ALLOW_SETTING,
) -> AsyncIterator[Jail]:
    """Start the egress proxy of one run and yield its jail; the proxy ends with the block.

    ``setting`` is what the owner writes to let the jail reach one more host.
    """
    jail = await start_jail(policy, allowed, label=label, bwrap=bwrap, setting=setting)
    try:
        yield jail
    finally:
        await jail.close()
