"""The one place a session's run becomes an :class:`Invocation`.

Every run of a runtime (trigger, schedule, builder, contract session, resume;
in the daemon or on a worker) starts from its :class:`~butler.spawner.session.Session`
and where this run happens (its folders, the butler's address from there);
:func:`build_invocation` adds what the butler decides: the environment
allow-list, the session's private home, the MCP endpoint the runtime calls
back on, and the composed system prompt. So a change to what every runtime
gets (a session token, a sandbox) is made here once.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Protocol

from butler.config import ButlerConfig
from butler.paths import data_root
from butler.runtimes.base import Invocation, McpEndpoint, RuntimeAdapter
from butler.spawner.environment import build_runtime_env
from butler.spawner.homes import session_home
from butler.spawner.prompt import compose_system_prompt
from butler.spawner.session import Session
from butler.store.credentials import CredentialStore
from butler.telemetry import current_traceparent


class TokenIssuer(Protocol):
    """Where a run's session token comes from: the daemon's :class:`SessionTokens`, or
    the token the daemon gave a worker with its job."""

    def issue(self, session_id: str) -> str: ...


def mcp_endpoint(config: ButlerConfig, token: str, base_url: str | None = None) -> McpEndpoint:
    """This butler's MCP server as a runtime reaches it with its session's token.

    The server knows the session by the token alone (it is revoked when the
    session ends); nothing in the address says who calls.
    """
    transport = config.runtime.transport
    path = "sse" if transport == "sse" else "mcp"
    return McpEndpoint(
        name=config.name,
        url=f"{base_url or config.mcp_base_url}/{path}",
        headers={"Authorization": f"Bearer {token}"},
        transport=transport,
    )


def system_prompt(
    config: ButlerConfig, adapter: RuntimeAdapter, memory: str | None = None, role: str = ""
) -> str:
    """The butler's prompt file as this runtime reads it, its includes, memory and role."""
    prompt_file = adapter.parse_system_prompt_file(config.config_dir)
    system = compose_system_prompt(
        prompt_file, config.roster_dir, memory, max_bytes=config.butler.max_prompt_bytes
    )
    return f"{system.rstrip()}\n\n{role}\n" if role else system


async def build_invocation(
    config: ButlerConfig,
    adapter: RuntimeAdapter,
    credentials: CredentialStore,
    session: Session,
    tokens: TokenIssuer,
    *,
    cwd: Path,
    workdir: Path,
    placed: str = "",
    memory: str | None = None,
    role: str = "",
    base_url: str | None = None,
) -> Invocation:
    """Everything one run of ``session`` needs; a missing required credential is a
    ConfigError.

    The run happens in ``cwd`` (the butler folder, or a builder's worktree) with
    ``workdir`` its private folder (MCP config, prompt files, launch spec);
    ``placed`` is what its workspace adds to the prompt (the attachments placed
    there), ``memory`` and ``role`` what the system prompt gets after the butler's
    own, and ``base_url`` where the runtime calls its butler when not on the
    daemon's machine (a worker's run: ``config.callback_url``). Issues the
    session's capability token from ``tokens``; the lifecycle revokes it when
    the session completes.
    """
    rt = config.runtime
    outage_limit_s = session.timeout_s or rt.timeout_s
    # A sender's session gets the model's keys and what the owner lets senders have.
    sender = adapter.type_name if session.tenant is not None else None
    env = await build_runtime_env(
        config, credentials, current_traceparent(), outage_limit_s, sender_runtime=sender
    )
    # Includes are read from disk and may be large: expand them off the event loop.
    system = await asyncio.to_thread(system_prompt, config, adapter, memory, role)
    return Invocation(
        prompt=session.prompt + placed,
        system_prompt=system,
        cwd=cwd,
        workdir=workdir,
        home=session_home(config, session.id, session.resumed_id),
        env=env,
        mcp=mcp_endpoint(config, tokens.issue(session.id), base_url),
        max_turns=session.max_turns or rt.max_turns,
        timeout_s=session.timeout_s or rt.timeout_s,
        # Another runtime than the butler's (a builder's --runtime) has its own model and args.
        model=session.model or (rt if adapter.type_name == rt.type else adapter.config).model,
        args=tuple((rt if adapter.type_name == rt.type else adapter.config).args),
        resume=session.resume,
        cache_dir=data_root() / "cache",
        max_output_bytes=config.butler.max_output_bytes,
        config_dir=config.config_dir,
    )
