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
from butler.runtimes.base import Invocation
from butler.sandbox import allowed_targets, butler_policy, open_jail

log = logging.getLogger(__name__)

Recorder = Callable[[dict[str, object]], Awaitable[None]]


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
    rt = config.runtime
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
    async with open_jail(policy, allowed, label=label) as jail:
        env = {**invocation.env, **jail.env()}
        try:
            yield replace(invocation, env=env, sandbox=jail)
        finally:
            if record is not None and jail.egress.blocked:
                try:
                    await record({"sandbox": jail.summary()})
                except Exception as exc:  # the row is a record; the session's outcome stands
                    log.warning("could not record the sandbox summary: %s", exc)
