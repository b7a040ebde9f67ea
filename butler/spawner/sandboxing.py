"""The one way into the jail: every runtime butler starts, every ``ask``/``chat`` agent,
and the daemon's own git.

Each caller describes what its runtime must see and reach in a
:class:`~butler.sandbox.JailRequest` (:func:`session_request` for a butler's
sessions, headless or in a builder's terminal; ``subagent/jail.py`` for an
``ask`` or ``chat`` agent), and enters through :func:`start_jail_for` (a jail
that outlives the call: a builder's) or :func:`jail_for` (one that ends with
the block). :func:`jailed` is the headless session's step: the invocation
gets its sandbox and proxy variables, or comes back unchanged with the jail off;
where the butler's spawner keeps a pool of warm jails (:func:`open_pool`), a
session that fits takes one of them instead of starting its own.
:func:`git_jail` is the one jail that runs no runtime: a git command of the
daemon's, with no network at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from pathlib import Path

from butler.config import ButlerConfig, SandboxConfig
from butler.runtimes.base import Invocation, RuntimeFailure
from butler.runtimes.registry import adapter_class
from butler.runtimes.settings import RuntimeConfig
from butler.sandbox import (
    Jail,
    JailRequest,
    jail_policy,
    jail_targets,
    probe,
    resolve_mode,
    start_jail,
)
from butler.sandbox.egress import Target
from butler.sandbox.installs import scripts
from butler.sandbox.policy import BUILDERS_DIR, JailPolicy, bwrap_argv
from butler.sandbox.pool import JailPool, Shape, WarmJail, pool_size
from butler.spawner.workspace import OWNER_FILE

log = logging.getLogger(__name__)

Recorder = Callable[[dict[str, object]], Awaitable[None]]

#: Stands for a session's workspace in a pool's shape: each warm jail has a workspace of its own.
WORKSPACE = Path("/")


def session_request(
    config: ButlerConfig,
    invocation: Invocation,
    *,
    writable: tuple[Path, ...] = (),
    runtime: RuntimeConfig | None = None,
    own_folder: bool = True,
) -> JailRequest:
    """A butler session's jail: its workspace, home and own folder writable, the rest read-only.

    The butler may edit its skills and files but never its ``butler.toml``, nor
    the roster's ``shared/`` folder every butler reads (docs/security.md).
    ``writable`` adds a builder's folders; ``runtime`` is the runtime it runs
    when not the butler's own (a builder's ``--runtime``): its model API is
    what the jail lets through. ``own_folder`` False (a chat sender's session)
    shows the butler folder read-only: every session reads its ``CLAUDE.md``,
    skills and roles, so what one person's session wrote there would instruct
    the owner's sessions and be read by another person's.
    """
    rt = runtime or config.runtime
    folder = config.config_dir
    shared = config.roster_dir / "shared"
    if not own_folder:
        return JailRequest(
            cwd=invocation.cwd,
            writable=(invocation.workdir, *writable),
            home=invocation.home,
            readable=(shared, folder),
            runtime=rt.type,
            env=invocation.env,
            args=tuple(rt.args),
            mcp_url=invocation.mcp.url if invocation.mcp else None,
            programs=runtime_programs(config, rt),
            scripts=tuple(scripts(folder / "skills")),
        )
    return JailRequest(
        cwd=invocation.cwd,
        writable=(invocation.workdir, folder, *writable),
        home=invocation.home,
        readable=(shared,),
        protected=(folder / "butler.toml", shared),
        # A .git made here would be obeyed by the owner's git (and a .builders/ would
        # reach a builder's jail): none can be made, an existing one stays read-only.
        held=(folder / ".git", folder / BUILDERS_DIR),
        runtime=rt.type,
        env=invocation.env,
        args=tuple(rt.args),
        mcp_url=invocation.mcp.url if invocation.mcp else None,
        programs=runtime_programs(config, rt),
        scripts=tuple(scripts(folder / "skills")),
    )


def runtime_programs(config: ButlerConfig, rt: RuntimeConfig) -> tuple[str, ...]:
    """The programs a runtime of ``rt`` starts in its jail: its ``cli_path``, its
    command's first words, its CLI's name (what the daemon's ``PATH`` finds)."""
    names = [rt.cli_path or "", *rt.command[:1], *rt.interactive_command[:1]]
    if rt.type not in {"command", "claude-code"}:  # named by their command or bundled
        with contextlib.suppress(ValueError, TypeError, ImportError):
            names.append(adapter_class(rt.type, config.roster_dir).binary_name)
    return tuple(dict.fromkeys(n for n in names if n))


async def start_jail_for(
    settings: SandboxConfig, request: JailRequest, *, label: str = "", folder: Path | None = None
) -> Jail:
    """A jail for ``request``, its proxy started (in ``folder`` if given); the caller closes it."""
    return await start_jail(
        jail_policy(settings, request),
        jail_targets(settings, request),
        label=label,
        folder=folder,
        setting=request.allow_setting,
    )


@contextlib.asynccontextmanager
async def jail_for(
    settings: SandboxConfig, request: JailRequest, *, label: str = ""
) -> AsyncIterator[Jail]:
    """A jail for ``request`` for the length of the block; its proxy ends with it."""
    jail = await start_jail_for(settings, request, label=label)
    try:
        yield jail
    finally:
        await jail.close()


async def jail_invocation(
    config: ButlerConfig,
    invocation: Invocation,
    *,
    label: str = "",
    writable: tuple[Path, ...] = (),
    runtime: RuntimeConfig | None = None,
    own_folder: bool = True,
) -> tuple[Invocation, Jail]:
    """``invocation`` in a jail of this butler, its proxy started; the caller closes the jail."""
    request = session_request(
        config, invocation, writable=writable, runtime=runtime, own_folder=own_folder
    )
    invocation.home.mkdir(mode=0o700, parents=True, exist_ok=True)
    jail = await start_jail_for(config.butler.sandbox, request, label=label)
    env = {**invocation.env, **jail.env(invocation.env.get("PATH", ""))}
    return replace(invocation, env=env, sandbox=jail), jail


async def record_summary(jail: Jail, record: Recorder | None) -> None:
    """Hand what the jail's proxy refused or could not reach, and the repositories its
    runtime left, to ``record``, if anything."""
    if record is None or not jail.noteworthy:
        return
    try:
        await record({"sandbox": jail.summary()})
    except Exception as exc:  # the row is a record; the session's outcome stands
        log.warning("could not record the sandbox summary: %s", exc)


def sandbox_mode(config: ButlerConfig) -> str:
    """What ``config``'s runtimes run in on this machine, ``"bwrap"`` or ``"none"``
    (:func:`butler.sandbox.resolve_mode`): decided once by whoever runs its sessions."""
    where = f"{config.config_dir / 'butler.toml'}: [butler.sandbox]"
    return resolve_mode(config.butler.sandbox, where)


def open_pool(config: ButlerConfig, mode: str) -> JailPool | None:
    """The pool of warm jails :func:`jailed` takes this butler's sessions' jails from, or
    None (no jail, or ``BUTLER_JAIL_POOL=0``). Its owner closes it (:meth:`JailPool.close`)."""
    size = pool_size(config.runtime.max_concurrent_sessions) if mode == "bwrap" else 0
    if size <= 0:
        return None
    return JailPool(size)


def _shape(config: ButlerConfig, request: JailRequest) -> tuple[JailPolicy, frozenset[Target]]:
    """The jail ``request`` asks for with its workspace and home left out (a pool's shape)."""
    settings = config.butler.sandbox
    general = replace(request, writable=(WORKSPACE, *request.writable[1:]), home=None)
    return jail_policy(settings, general), jail_targets(settings, request)


def _fits_warm(invocation: Invocation, writable: tuple[Path, ...]) -> bool:
    """Whether a warm jail can run ``invocation``: its workspace and home still empty (the
    jail has its own), no extra folder, and nothing it is given names its workspace."""
    if writable:
        return False
    try:
        if set(os.listdir(invocation.workdir)) - {OWNER_FILE} or os.listdir(invocation.home):
            return False
    except OSError:
        return False
    work = str(invocation.workdir)
    given = [invocation.prompt, invocation.system_prompt, *invocation.env.values()]
    return not any(work in text for text in [*given, *invocation.args])


def _take_warm(
    pool: JailPool, shape: tuple[JailPolicy, frozenset[Target]], invocation: Invocation, label: str
) -> WarmJail | None:
    """A warm jail of ``pool`` for ``invocation``, its home moved into the session's place."""
    warm = pool.take(*shape)
    if warm is None:
        return None
    try:
        os.rmdir(invocation.home)  # empty (see _fits_warm): the warm jail's takes its place
        os.rename(warm.home, invocation.home)
    except OSError as exc:
        log.warning("a warm jail's home could not be moved into place: %s", exc)
        invocation.home.mkdir(mode=0o700, exist_ok=True)
        pool.release(warm)
        return None
    warm.taken = True
    warm.jail.egress.label = label
    base = warm.jail
    policy = replace(base.policy, home=invocation.home)
    return WarmJail(
        policy, base.egress, base.proxy_port, base.forwards, base.bwrap, warm=warm, pool=pool
    )


@contextlib.asynccontextmanager
async def jailed(
    config: ButlerConfig,
    mode: str,
    invocation: Invocation,
    *,
    label: str = "",
    writable: tuple[Path, ...] = (),
    record: Recorder | None = None,
    pool: JailPool | None = None,
    own_folder: bool = True,
) -> AsyncIterator[Invocation]:
    """``invocation`` inside a jail of this butler when ``mode`` is ``"bwrap"``: a warm one
    of ``pool`` when it fits (the invocation then names that jail's workspace).
    ``own_folder``: see :func:`session_request` (a warm jail has it writable)."""
    if mode != "bwrap":
        yield invocation
        return
    shape, jail = None, None
    if pool is not None and own_folder and _fits_warm(invocation, writable):
        request = session_request(config, invocation)
        shape = _shape(config, request)
        invocation.home.mkdir(mode=0o700, parents=True, exist_ok=True)
        jail = _take_warm(pool, shape, invocation, label)
    if jail is not None:
        path = invocation.env.get("PATH", "")
        jailed_invocation = replace(
            invocation,
            env={**invocation.env, **jail.env(path)},
            sandbox=jail,
            workdir=jail.policy.writable[0],
        )
    else:
        jailed_invocation, jail = await jail_invocation(
            config, invocation, label=label, writable=writable, own_folder=own_folder
        )
    try:
        yield jailed_invocation
    except RuntimeFailure as exc:
        # What the proxy saw comes first: a CLI shown a refused tunnel guesses at
        # the cause ("check its credentials") when the host did not resolve.
        account = jail.egress.account()
        if account is None:
            raise
        raise RuntimeFailure(f"{account}; the runtime said: {exc}", exc.partial) from None
    finally:
        await jail.close()  # first: its end looks at what the runtime left, for the record
        await record_summary(jail, record)
        if pool is not None and shape is not None and len(set(jail.programs)) == 1:
            home = invocation.home.parent  # a warm home is made there, to be renamed
            pool.learn(Shape(*shape, jail.programs[0], home, jail.egress.setting))


async def git_jail(repo: Path, writable: tuple[Path, ...]) -> list[str]:
    """The bubblewrap argv (ending in ``--``) that runs one of the daemon's own git
    commands in ``repo``: the repository readable, ``writable`` (its ``.git`` and
    worktrees folder) writable, nothing else of the owner's and no network at all (no
    proxy: git may reach no host). ``[]`` where this machine cannot start a jail (and
    so jails no runtime either). The git folder is not guarded as a builder's is:
    this git writes worktrees, refs and config sections (docs/security.md)."""
    if await asyncio.to_thread(probe) is not None:
        return []
    policy = JailPolicy(read_only=(repo,), writable=writable, guard_git=False)
    return [*bwrap_argv(policy, shutil.which("bwrap") or "bwrap"), "--"]
