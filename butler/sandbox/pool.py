"""Warm jails: made ahead of demand, each handed to one session at most, never reused.

A jail's start (bubblewrap building its namespaces and mounts, the bridge
listening on its loopback) is most of what the jail adds to a session's
start. A butler's headless sessions all ask for the same jail but for two
folders: the session's workspace and its home. So a :class:`JailPool` keeps
a few jails started with folders of their own, holding nothing of any
session: a fresh empty workspace (in the jail's private folder) and a fresh
empty home (next to the sessions' homes). A session that fits takes one:
its home folder is renamed into the session's place (a mount follows its
folder, not its name), the workspace is the jail's, and the runtime's
arguments, environment and standard streams are handed to the waiting
bridge by the session's launch script (``bridge attach``, see bridge_attach.c).
The jail's policy, allow-list, proxy, seccomp filter and bounds are exactly
those of a jail made for the session: :meth:`JailPool.take` hands out only
a jail made for the same policy and allow-list, with its proxy's counts
still empty. A session that does not fit, or finds the pool empty, starts a
jail of its own as before.

The pool learns what to make from the first session that fits (its jail's
policy and the runtime's program), then keeps ``size`` jails ready, made
in the background. :meth:`JailPool.close` ends them all and removes their
folders; a jail whose pool was dropped unclosed ends too, when its lifeline
(a pipe the pool holds) closes with the daemon's object or process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import shutil
import socket
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

import butler.sandbox.cgroups as cgroups
from butler.processes import owner_gone, owner_mark
from butler.sandbox.bridge_binary import bridge_binary
from butler.sandbox.egress import ALLOW_SETTING, Target
from butler.sandbox.folders import new_jail_folder
from butler.sandbox.jail import SHELL_NAME, Jail, run_name, start_jail
from butler.sandbox.policy import JailPolicy
from butler.sandbox.seccomp import filter_program
from butler.security.private_files import write_private

log = logging.getLogger("butler.sandbox")

#: ``BUTLER_JAIL_POOL=N`` keeps N warm jails per butler (at most its slots); none unless
#: asked for. Off by default because it did not pay on a quiet machine: trigger p50 56.9
#: ms with two warm jails against 57.5 without, 5.7 ms more CPU per trigger for the jails
#: made ahead, p95 67 against 78 ms (benchmarks/warm_jails.py, 40 triggers each,
#: interleaved, load 2.0-2.8): a jail's namespaces and mounts are some 10 ms of a ~57 ms
#: trigger, and handing a session to a waiting jail costs a process of its own.
POOL_VARIABLE = "BUTLER_JAIL_POOL"
DEFAULT_SIZE = 0
#: A warm jail's home is made beside the sessions' homes (a rename moves it into place).
HOME_PREFIX = ".pool-"
#: After this many jails in a row fail to start, the pool stops making them (one warning).
MAX_FAILURES = 3
#: How long a jail that was let go may take to end before it is killed.
STOP_S = 5.0
#: In a warm jail's private folder: what bubblewrap and the bridge said before a session took it.
ERRORS = "warm.err"


def pool_size(max_sessions: int) -> int:
    """How many warm jails a butler of ``max_sessions`` slots keeps."""
    raw = os.environ.get(POOL_VARIABLE, "").strip()
    if raw.isdigit():
        return min(int(raw), max_sessions)
    return min(DEFAULT_SIZE, max_sessions)


@dataclass(frozen=True)
class Shape:
    """What every jail of a pool is: the policy (its first writable folder, the session's
    workspace, and its home stand for the jail's own), allow-list and runtime program."""

    policy: JailPolicy
    targets: frozenset[Target]
    program: str
    #: Where the sessions' homes are made: a warm home is made there, to be renamed.
    homes: Path
    setting: str = ALLOW_SETTING


@dataclass
class Warm:
    """One warm jail: started, its bridge waiting for the one session it will run."""

    jail: Jail
    process: asyncio.subprocess.Process
    #: The pool's end of the pipe whose closing ends the bridge while it waits.
    lifeline: IO[bytes]
    #: The Unix socket the bridge accepts its session on (outside the jail, private).
    attach: Path
    program: str
    home: Path
    work: Path
    #: Its home was moved into a session's place: the session's now, never removed here.
    taken: bool = False
    #: A session's runtime was handed to it (its launch script written).
    used: bool = False

    @property
    def alive(self) -> bool:
        """Still waiting: not reaped, nor ended and not yet reaped (a zombie)."""
        if self.process.returncode is not None:
            return False
        try:
            stat = Path(f"/proc/{self.process.pid}/stat").read_bytes()
        except OSError:
            return False
        return stat.rsplit(b")", 1)[-1].split()[:1] != [b"Z"]

    def trouble(self) -> str:
        """What bubblewrap or the bridge said, if anything (the last line)."""
        try:
            said = (self.attach.parent / ERRORS).read_bytes()[-1000:]
        except OSError:
            return ""
        return said.decode(errors="replace").strip().splitlines()[-1:][0] if said.strip() else ""

    async def stop(self) -> None:
        """End the jail (at once if unused; a taken one ends with its run) and wait for it."""
        self.lifeline.close()
        try:
            await asyncio.wait_for(self.process.wait(), STOP_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            await self.process.wait()


@dataclass(frozen=True)
class WarmJail(Jail):
    """A session's jail taken from the pool: its runtime is started by handing it over."""

    warm: Warm | None = field(default=None, compare=False)
    pool: JailPool | None = field(default=None, compare=False)

    def wrap_exact(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        passthrough: Iterable[str],
        pid_file: Path,
    ) -> list[str]:
        """As :meth:`Jail.wrap_exact`, the runtime started in the warm jail when it was made
        for ``argv[0]`` (else in a jail of its own, with the same policy)."""
        warm = self.warm
        if warm is None or warm.used or argv[0] != warm.program:
            return super().wrap_exact(argv, env, passthrough, pid_file)
        warm.used = True
        # Its own jail's launch script too: what the attach runs if the warm jail ended.
        cold = super().wrap_exact(argv, env, passthrough, pid_file)[0]
        folder = warm.attach.parent
        run = run_name()
        entries = [f"{k}={self.inside(v)}" for k, v in env.items() if SHELL_NAME.match(k)]
        env_file = write_private(
            folder / f"env-{run}", "".join(e + "\0" for e in entries), how="exclusive"
        )
        names = ",".join(sorted(n for n in set(passthrough) - set(env) if SHELL_NAME.match(n)))
        start = [
            str(bridge_binary()),
            "attach",
            str(warm.attach),
            str(env_file),
            names,
            cold,
            "--",
            argv[0],
        ]
        quoted = " ".join(shlex.quote(a) for a in start)
        body = f'echo $$ > {shlex.quote(str(pid_file))}\nexec {quoted} "$@"\n'
        script = write_private(
            folder / f"run-{run}", "#!/bin/sh\n" + body, how="exclusive", executable=True
        )
        return [str(script), *map(self.inside, argv[1:])]

    async def close(self) -> None:
        """Stop the proxy now; the pool ends the jail and removes its folder in the background
        (and waits for both when it closes), off the session's way to its result."""
        if self.warm is None or self.pool is None:
            await super().close()
            return
        await self.egress.close()  # from now on the jail reaches nothing
        try:
            # For the session's row; the pool's close of the jail, once every process
            # of it has ended, looks again.
            await self.disarm_left()
        finally:
            self.pool.release(self.warm)


class JailPool:
    """Up to ``size`` warm jails of one butler, made in the background, each used once."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.shape: Shape | None = None
        self._ready: list[Warm] = []
        self._making = 0
        self._failures = 0
        self._closed = False
        self._tasks: set[asyncio.Task[None]] = set()
        #: Warm jails handed to sessions so far.
        self.taken = 0

    @property
    def ready(self) -> int:
        """Warm jails waiting for a session now."""
        return len(self._ready)

    def learn(self, shape: Shape) -> None:
        """Make jails of ``shape`` from now on (the first session's that fits)."""
        if self.shape is None and not self._closed:
            self.shape = shape
            self._fill()

    def take(self, policy: JailPolicy, targets: frozenset[Target]) -> Warm | None:
        """A live warm jail made for ``policy`` and ``targets`` (as :class:`Shape` says),
        or None; the pool makes another in the background."""
        shape = self.shape
        if shape is None or shape.policy != policy or shape.targets != targets:
            return None
        while self._ready:
            warm = self._ready.pop(0)
            if warm.alive:
                self.taken += 1
                return warm
            self._failures += 1  # it ended while it waited: counted as one that failed
            log.warning("a warm jail ended before a session took it: %s", warm.trouble() or "?")
            self.release(warm)
        return None

    def release(self, warm: Warm) -> None:
        """Let ``warm`` go: end it (once its run is over), remove its folders, make another.

        Made now rather than when it was taken: then its start would compete with the
        start of the session that took it, for the same cores."""
        self._spawn(self._discard(warm))
        self._fill()

    async def close(self) -> None:
        """End every jail of the pool and remove their folders; make no more."""
        self._closed = True
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        ready, self._ready = self._ready, []
        await asyncio.gather(*(self._discard(w) for w in ready), return_exceptions=True)

    def _spawn(self, work: object) -> None:
        task = asyncio.get_running_loop().create_task(work)  # type: ignore[arg-type]
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _fill(self) -> None:
        while (
            self.shape is not None
            and not self._closed
            and self._failures < MAX_FAILURES
            and len(self._ready) + self._making < self.size
        ):
            self._making += 1
            self._spawn(self._make(self.shape))

    async def _make(self, shape: Shape) -> None:
        try:
            warm = await make_warm(shape)
        except Exception as exc:
            self._failures += 1
            if self._failures == MAX_FAILURES:
                log.warning(
                    "warm jails stopped: %d failed to start, the last: %s", MAX_FAILURES, exc
                )
            return
        finally:
            self._making -= 1
        self._failures = 0
        if self._closed:
            await self._discard(warm)
        else:
            self._ready.append(warm)

    async def _discard(self, warm: Warm) -> None:
        try:
            await warm.stop()
        finally:
            await warm.jail.close()
            if not warm.taken:  # a taken one's home is its session's now
                await asyncio.to_thread(shutil.rmtree, warm.home, True)


async def make_warm(shape: Shape) -> Warm:
    """Start one jail of ``shape`` whose bridge waits for its session."""
    folder = new_jail_folder()
    work = folder / "work"
    work.mkdir(mode=0o700)
    home = Path(tempfile.mkdtemp(prefix=f"{HOME_PREFIX}{owner_mark()}-", dir=shape.homes))
    try:
        policy = replace(shape.policy, writable=(work, *shape.policy.writable[1:]), home=home)
        jail = await start_jail(policy, shape.targets, folder=folder, setting=shape.setting)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
        raise
    try:
        return await _start_bridge(jail, shape.program, folder, work, home)
    except BaseException:
        await jail.close()
        shutil.rmtree(home, ignore_errors=True)
        raise


async def _start_bridge(jail: Jail, program: str, folder: Path, work: Path, home: Path) -> Warm:
    """bubblewrap started on ``jail``'s options, its bridge waiting on a private socket."""
    held = _cgroup_files(jail.cgroup)
    options, command = jail.bridged(program, cgroup_fds=tuple(held))
    attach = folder / "attach.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(attach))
    listener.listen(1)
    wait_end, lifeline = os.pipe()
    own = [listener.fileno(), wait_end, *held]
    # Until a session takes it, what bubblewrap or the bridge says goes to a private file.
    errors = os.open(folder / ERRORS, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        # Its runtime's argv comes from its session: none on a command line all can read.
        command = [*command[: command.index("--")], f"warm={listener.fileno()},{wait_end}", "--"]
        options = ["--clearenv", *options]
        program_bytes = filter_program()
        if program_bytes is not None:
            own.append(_memfd("butler-jail-seccomp", program_bytes))
            options += ["--seccomp", str(own[-1])]
        own.append(_memfd("butler-jail-args", b"".join(o.encode() + b"\0" for o in options)))
        process = await asyncio.create_subprocess_exec(
            jail.bwrap,
            "--args",
            str(own[-1]),
            "--",
            *command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=errors,
            env={},
            cwd="/",
            pass_fds=own,
            # A session of its own, as a cold jail's (setsid): a Ctrl-C at the terminal of
            # `butler up` drains the daemon, it must not reach its warm jails first.
            start_new_session=True,
        )
    except BaseException:
        os.close(lifeline)
        raise
    finally:
        listener.close()
        for fd in [*own[1:], errors]:
            os.close(fd)
    return Warm(jail, process, os.fdopen(lifeline, "wb"), attach, program, home, work)


def _cgroup_files(cgroup: Path | None) -> list[int]:
    """The bridge's way into the jail's cgroup and the event files it waits on, opened."""
    if cgroup is None:
        return []
    names = [name for name, _, _ in cgroups.EVENTS]
    return [
        os.open(cgroup / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC),
        *(os.open(cgroup / name, os.O_RDONLY | os.O_CLOEXEC) for name in names),
    ]


def _memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def sweep_warm_homes(homes: Path) -> list[Path]:
    """Remove warm homes (never a session's) left by a daemon that is gone."""
    removed = []
    for folder in homes.glob(f"{HOME_PREFIX}*") if homes.is_dir() else []:
        if owner_gone(folder.name.removeprefix(HOME_PREFIX).split("-", 1)[0]):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed
