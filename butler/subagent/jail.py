"""``ask`` and ``chat`` in the runtime jail: the person's agent reaches its sources and model only.

The agent runs in the same bubblewrap jail as a butler's sessions
(:mod:`butler.sandbox`): the system read-only, the temp folder of the call
writable, each requested source readable at its own path (so the symlinks in
the folder resolve), and a private ``HOME`` inside the temp folder, removed
with it. Its network is the jail's egress proxy, which lets through only the
agent's model API (a ``*_BASE_URL`` variable of the person's environment, else
the CLI's default API host) and ``[sandbox] allow_hosts`` of ``config.toml``
(an MCP server the agent is given, say). The rest of the person's files
(their SSH keys, other checkouts) and every other host are out of reach.

``[sandbox] mode`` (or ``BUTLER_SANDBOX``) is ``auto``, ``bwrap`` or ``none``,
as for a butler; ``[sandbox] read_only`` adds paths the agent may read (a
CLI's login folder, e.g. ``~/.claude``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from butler.config import SandboxConfig
from butler.sandbox import Jail, JailRequest
from butler.spawner.sandboxing import jail_for

#: Where the person lets an ``ask``/``chat`` agent reach one more host.
ALLOW_SETTING = "[sandbox] allow_hosts of config.toml"
#: The agent's private home, inside the call's temp folder (removed with it).
HOME_DIR = ".home"
#: Variables that point into the person's real home, which the jail does not hold.
DROPPED_IN_JAIL = (
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
)


@dataclass(frozen=True)
class AgentRun:
    """How to start the agent for one call: its argv wrapper and its environment."""

    env: dict[str, str]
    jail: Jail | None = None
    notes: dict[str, object] = field(default_factory=dict)

    def wrap(self, argv: list[str], *, interactive: bool = False) -> list[str]:
        """``argv`` inside the jail, or unchanged without one."""
        if self.jail is None:
            return argv
        return self.jail.wrap(argv, interactive=interactive)


def model_env(env: Mapping[str, str]) -> dict[str, str]:
    """The variables that name the agent's model API (``ANTHROPIC_BASE_URL``...)."""
    return {k: v for k, v in env.items() if k.endswith("_BASE_URL")}


def agent_request(
    agent: str,
    argv: Sequence[str],
    workspace: Path,
    sources: Sequence[Path],
    env: Mapping[str, str],
) -> JailRequest:
    """The temp folder writable, the sources readable; the model API its variables name."""
    return JailRequest(
        cwd=workspace,
        writable=(workspace,),
        readable=tuple(sources),
        runtime=agent,
        env=model_env(env),
        args=tuple(argv),
        allow_setting=ALLOW_SETTING,
        # Found on the person's PATH (nvm, pipx): its installation is bound read-only.
        programs=tuple(argv[:1]),
    )


@contextlib.asynccontextmanager
async def agent_run(
    settings: SandboxConfig,
    mode: str,
    *,
    agent: str,
    argv: Sequence[str],
    workspace: Path,
    sources: Sequence[Path],
    env: Mapping[str, str],
) -> AsyncIterator[AgentRun]:
    """The run of one ``ask``/``chat``: jailed when ``mode`` is ``"bwrap"``."""
    if mode != "bwrap":
        yield AgentRun(dict(env))
        return
    home = workspace / HOME_DIR
    home.mkdir(mode=0o700, exist_ok=True)
    request = agent_request(agent, argv, workspace, sources, env)
    async with jail_for(settings, request, label=f"ask:{agent}") as jail:
        inner = {k: v for k, v in env.items() if k not in DROPPED_IN_JAIL}
        inner.update(HOME=str(home), TMPDIR="/tmp", **jail.env(env.get("PATH", "")))
        yield AgentRun(inner, jail)
