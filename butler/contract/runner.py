"""The adapter contract's operations, driven against a running butler daemon.

spawn / resume / check_status (README, "The adapter contract"): sessions run in the daemon; this
side reads the brief, keeps the state file and the adapter log. Each operation talks to the
daemon over one MCP session of :mod:`butler.mcp_http` (FastMCP's client cost a second of CPU
to import).
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

from butler.client import daemon_tools
from butler.config import ButlerConfig
from butler.contract.state import (
    STATE_STATUS,
    artifacts_of,
    brief_name,
    log_line,
    read_state,
    write_state,
)
from butler.errors import ButlerError, UserError
from butler.mcp_http import ToolSession

POLL_S = 0.5
#: How long one call to the daemon may take (they only read or queue).
CALL_TIMEOUT_S = 60.0
# A tool's refusal (an unknown session id...) exits 1, as the contract says.


def _read_brief(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: brief file not found; expected a markdown file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read the brief: {exc}") from None


def _brief_prompt(brief: str, prompt: str) -> str:
    return f"{prompt}\n\n## Brief\n\n{brief.strip()}\n"


def wait_done(tools: ToolSession, session_id: str, timeout_s: float) -> dict[str, Any]:
    """Poll the session until it is completed or failed, or raise after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        status = tools.call("session_status", {"session_id": session_id})
        if status["status"] in ("completed", "failed"):
            return status
        if time.monotonic() > deadline:
            raise UserError(
                f"session {session_id} still {status['status']} after "
                f"{timeout_s / 60:g} minutes (timeout_minutes)"
            )
        time.sleep(POLL_S)


def spawn(
    config: ButlerConfig,
    brief_path: Path,
    state_path: Path,
    prompt: str,
    *,
    wait: bool = False,
    timeout_minutes: float | None = None,
) -> str:
    """Start a session for the brief (or join the one already active); return its id."""
    brief = _read_brief(brief_path)
    state = read_state(state_path)
    timeout_s = (timeout_minutes * 60) if timeout_minutes else None
    key = hashlib.sha256(f"{config.name}\0{brief}".encode()).hexdigest()
    with daemon_tools(config, timeout=CALL_TIMEOUT_S, tool_error=ButlerError) as tools:
        started = tools.call(
            "session_start",
            {
                "prompt": _brief_prompt(brief, prompt),
                "dedupe_key": key,
                "timeout_s": timeout_s,
                "metadata": {
                    "brief": str(brief_path),
                    "state_file": str(state_path),
                },
            },
        )
        session_id = started["session_id"]
        state.update(
            lego_name=state["lego_name"] or brief_name(brief, brief_path.stem),
            status="in-progress",
            session_id=session_id,
            current_substep="spawned",
        )
        write_state(state_path, state)
        verb = "spawned" if started["started"] else "joined the active session for"
        log_line(config, session_id, f"{verb} brief {brief_path}")
        if wait:
            _settle(tools, config, session_id, state_path, timeout_s)
    return session_id


def resume(
    config: ButlerConfig,
    session_id: str,
    state_path: Path,
    prompt: str,
    *,
    wait: bool = False,
    timeout_minutes: float | None = None,
) -> str:
    """Continue a session in a new linked one; return a one-line message."""
    state = read_state(state_path)
    timeout_s = (timeout_minutes * 60) if timeout_minutes else None
    with daemon_tools(config, timeout=CALL_TIMEOUT_S, tool_error=ButlerError) as tools:
        started = tools.call(
            "session_resume",
            {
                "session_id": session_id,
                "prompt": prompt,
                "wait": False,
                "timeout_s": timeout_s,
            },
        )
        new_id = started["session_id"]
        state.update(
            status="in-progress",
            session_id=new_id,
            current_substep="resumed",
            resumed_from=session_id,
        )
        write_state(state_path, state)
        log_line(config, session_id, f"resumed as {new_id}")
        log_line(config, new_id, f"resumes {session_id}")
        if wait:
            final = _settle(tools, config, new_id, state_path, timeout_s)
            return f"resumed {session_id} as {new_id}: {final['status']}"
    return f"resumed {session_id} as {new_id}"


def check_status(config: ButlerConfig, session_id: str) -> str:
    """pending, active, completed or failed; brings the session's state file up to date."""
    with daemon_tools(config, timeout=CALL_TIMEOUT_S, tool_error=ButlerError) as tools:
        status = tools.call("session_status", {"session_id": session_id})
        state_file = (status.get("metadata") or {}).get("state_file")
        if state_file and status["status"] in ("completed", "failed"):
            _record_end(tools, config, session_id, Path(state_file), status)
    log_line(config, session_id, f"check_status: {status['status']}")
    return status["status"]


def _settle(
    tools: ToolSession,
    config: ButlerConfig,
    session_id: str,
    state_path: Path,
    timeout_s: float | None,
) -> dict[str, Any]:
    status = wait_done(tools, session_id, timeout_s or config.runtime.timeout_s + 30)
    _record_end(tools, config, session_id, state_path, status)
    return status


def _record_end(
    tools: ToolSession,
    config: ButlerConfig,
    session_id: str,
    state_path: Path,
    status: dict[str, Any],
) -> None:
    """Write a finished session into its state file, once."""
    state = read_state(state_path)
    if state.get("session_id") != session_id or state["status"] in ("completed", "failed"):
        return
    row = tools.call("session_get", {"session_id": session_id})
    state["status"] = STATE_STATUS[status["status"]]
    if status["status"] == "failed":
        state["failure_count"] = int(state["failure_count"]) + 1
        state["last_error"] = row.get("error")
    else:
        state["completed_substeps"] = [*state["completed_substeps"], state["current_substep"]]
    state["current_substep"] = ""
    state["artifacts"] = sorted({*state["artifacts"], *artifacts_of(row["tool_calls"])})
    write_state(state_path, state)
    log_line(config, session_id, f"finished: {status['session_status']}")
