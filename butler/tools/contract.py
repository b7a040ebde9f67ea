"""Tools behind the adapter contract: start, check and resume sessions by id.

``session_start`` returns a session id at once while the session runs on;
starting again with the same ``dedupe_key`` while that session is pending or
running returns the same id instead of a second run. Statuses are reported in
the contract's words: pending, active, completed, failed.
"""

# No postponed annotations: FastMCP reads the argument types (and their bounds) at runtime.
import asyncio
from typing import Any

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError

from butler.context import ButlerContext
from butler.errors import ButlerError
from butler.security.caller import current_caller, request_origin
from butler.spawner.spawner import TriggerRequest
from butler.tools.limits import Metadata, Name, prompt_text, timeout_seconds
from butler.tools.sessions import found_session
from butler.tools.tenancy import current_tenant

#: Session statuses as the adapter contract names them.
CONTRACT_STATUS = {
    "pending": "pending",
    "running": "active",
    "succeeded": "completed",
    "failed": "failed",
    "cancelled": "failed",
    "ended": "failed",
}


def register_contract_tools(mcp: FastMCP, butler: ButlerContext) -> None:
    """Add ``session_start``, ``session_status`` and ``session_resume`` to ``mcp``."""
    _register_status(mcp, butler)
    starting = asyncio.Lock()
    Prompt = prompt_text(butler.config.butler.max_prompt_bytes)
    Timeout = timeout_seconds(butler.config.runtime.timeout_s)

    async def start(request: TriggerRequest) -> str:
        try:
            session_id, _ = await butler.spawner.start(request)
        except ButlerError as exc:  # refused (Rejected) or not resumable
            raise ToolError(str(exc)) from None
        return session_id

    @mcp.tool
    async def session_start(
        prompt: Prompt,
        dedupe_key: Name = None,
        timeout_s: Timeout = None,
        metadata: Metadata = None,
    ) -> dict[str, Any]:
        """Start a session in the background; return its id at once.

        With ``dedupe_key``, a pending or running session started with the same
        key is returned instead of starting a second one.
        """
        meta = given_metadata(metadata)
        async with starting:
            if dedupe_key:
                dedupe_key = meta["dedupe_key"] = own_key(dedupe_key)
                existing = await butler.sessions.find_active(dedupe_key)
                if existing:
                    return {"session_id": existing, "started": False}
            origin = request_origin(current_caller())
            request = TriggerRequest(prompt, timeout_s=timeout_s, metadata=meta, **origin)
            return {"session_id": await start(request), "started": True}

    @mcp.tool
    async def session_resume(
        session_id: str, prompt: Prompt, wait: bool = True, timeout_s: Timeout = None
    ) -> dict[str, Any]:
        """Continue a session's runtime conversation with ``prompt`` in a new, linked session.

        With ``wait`` (the default) returns the new session's result; without,
        returns its id at once.
        """
        origin = request_origin(current_caller())
        resumed = str((await found_session(butler, session_id))["id"])
        request = TriggerRequest(prompt, resume_session_id=resumed, timeout_s=timeout_s, **origin)
        if not wait:
            return {"session_id": await start(request), "started": True}
        try:
            result = await butler.spawner.trigger(request)
        except ButlerError as exc:
            raise ToolError(str(exc)) from None
        return result.to_dict()


def given_metadata(metadata: dict[str, Any] | None) -> dict[str, Any]:
    """A caller's metadata without a ``dedupe_key``: the argument is the one way to give
    one. Found there by ``find_active`` unprefixed, a key a chat sender's session wrote
    would plant the session an owner's (or another person's) next start with it joins."""
    return {k: v for k, v in (metadata or {}).items() if k != "dedupe_key"}


def own_key(dedupe_key: str) -> str:
    """The caller's ``dedupe_key``: a chat's session dedupes among its own scope only."""
    tenant = current_tenant()
    return dedupe_key if tenant is None else f"{tenant.state_prefix}{dedupe_key}"


def _register_status(mcp: FastMCP, butler: ButlerContext) -> None:
    @mcp.tool
    async def session_status(session_id: str) -> dict[str, Any]:
        """One of pending, active, completed, failed, with the recorded detail."""
        row = await found_session(butler, session_id)
        return {
            "session_id": row["id"],
            "status": CONTRACT_STATUS[row["status"]],
            "session_status": row["status"],
            "error": row["error"],
            "metadata": row["metadata"],
        }
