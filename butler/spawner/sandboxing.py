"""The session path's one step into the jail: an invocation gets its sandbox and proxy variables.

Every feature that starts a runtime for a butler goes through :func:`jailed`
with the invocation it built; with the jail off it hands the invocation back
unchanged. What the jail's proxy refused is handed to ``record`` when the
block ends, for the session's row.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from pathlib import Path

from butler.config import ButlerConfig
from butler.runtimes.base import Invocation, RuntimeFailure
from butler.runtimes.settings import RuntimeConfig
from butler.sandbox import Jail, allowed_targets, butler_policy
from butler.sandbox.jail import start_jail

log = logging.getLogger(__name__)

Recorder = Callable[[dict[str, object]], Awaitable[None]]


async def start_jail_for(
    config: ButlerConfig,
    invocation: Invocation,
    *,
    label: str = "",
    writable: tuple[Path, ...] = (),
    folder: Path | None = None,
    runtime: RuntimeConfig | None = None,
) -> tuple[Invocation, Jail]:
    """A jail of this butler for ``invocation``, its proxy started; the caller closes it.

    ``runtime`` is the runtime it runs when not the butler's own (a builder's
    ``--runtime``): its model API is what the jail lets through.
    """
    rt = runtime or config.runtime
    allowed = allowed_targets(
        rt.type,
        invocation.env,
        rt.args,
        invocation.mcp.url if invocation.mcp else None,
        config.butler.sandbox.allow_hosts,
    )
    policy = butler_policy(
        config,
        workspace=invocation.workdir,
        home=invocation.home,
        cwd=invocation.cwd,
        writable=writable,
    )
    invocation.home.mkdir(mode=0o700, parents=True, exist_ok=True)
    jail = await start_jail(policy, allowed, label=label, folder=folder)
    env = {**invocation.env, **jail.env(invocation.env.get("PATH", ""))}
    return replace(invocation, env=env, sandbox=jail), jail


async def record_summary(jail: Jail, record: Recorder | None) -> None:
    """Hand what the jail's proxy refused or could not reach to ``record``, if anything."""
    if record is None or not (jail.egress.blocked or jail.egress.trouble):
        return
    try:
        await record({"sandbox": jail.summary()})
    except Exception as exc:  # the row is a record; the session's outcome stands
        log.warning("could not record the sandbox summary: %s", exc)


@contextlib.asynccontextmanager
async def jailed(
    config: ButlerConfig,
    mode: str,
    invocation: Invocation,
    *,
    label: str = "",
    writable: tuple[Path, ...] = (),
    record: Recorder | None = None,
) -> AsyncIterator[Invocation]:
    """``invocation`` inside a jail of this butler when ``mode`` is ``"bwrap"``."""
    if mode != "bwrap":
        yield invocation
        return
    jailed_invocation, jail = await start_jail_for(
        config, invocation, label=label, writable=writable
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
        await record_summary(jail, record)
        await jail.close()
