"""What Claude Code may do in a butler session, headless or in a terminal.

The built-in tools it may use and where its system prompt is read from (both
modes), and, for builders, the terminal session's command line, MCP config and
the first-run state a detached session cannot answer by itself. Pure: no I/O.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from butler.runtimes.base import Invocation
from butler.runtimes.mcp_config import claude_entry

#: Built-in tools a butler session may use: skills scripts and its config folder.
BUILTIN_TOOLS = ("Bash", "Read", "Write", "Edit", "Glob", "Grep")
#: In the workspace: what the CLI reads instead of taking it on its command line,
#: where every local user would read it (and 128 KiB would not even fit).
SYSTEM_PROMPT_FILE = "system_prompt.md"

#: What the TUI shows once it takes input.
READY = ("? for shortcuts", "shift+tab to cycle", "for agents")
#: The TUI only: it would clone a plugin marketplace at start-up; and it would start its
#: first turn while the butler's server is still connecting, so without its tools.
INTERACTIVE_ENV = {
    "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
    "MCP_CONNECTION_NONBLOCKING": "0",
}


def interactive_mcp_config(invocation: Invocation) -> dict[str, Any]:
    """The butler's one server for the TUI; ``alwaysLoad`` makes its first turn wait for it."""
    if invocation.mcp is None:
        return {"mcpServers": {}}
    mcp = invocation.mcp
    return {"mcpServers": {mcp.name: {**claude_entry(mcp), "alwaysLoad": True}}}


def interactive_argv(invocation: Invocation, cli: str, mcp_config: Path) -> list[str]:
    """Claude Code as a terminal session, locked down as :func:`build_options` does."""
    allowed = list(BUILTIN_TOOLS)
    argv = [cli, "--system-prompt-file", str(invocation.workdir / SYSTEM_PROMPT_FILE)]
    if invocation.mcp is not None:
        allowed.append(f"mcp__{invocation.mcp.name}")
        argv += ["--mcp-config", str(mcp_config)]
    # The "=" forms: both options are variadic and would swallow the prompt.
    argv += ["--strict-mcp-config", "--setting-sources=", f"--allowedTools={','.join(allowed)}"]
    if invocation.model:
        argv += ["--model", invocation.model]
    # The prompt is typed in once the TUI is up, never given here: argv is public (``ps``).
    return argv + list(invocation.args)


def interactive_state(invocation: Invocation, existing: dict[str, Any]) -> dict[str, Any]:
    """``.claude.json`` answering the first-run questions a detached session cannot answer.

    Onboarding, trust in the builder's own worktree, and use of the API key the
    butler was configured with (Claude records approval by the key's last 20
    characters, as it does when a person says yes).
    """
    state = {**existing, "hasCompletedOnboarding": True}
    state.setdefault("theme", "dark")
    projects = dict(state.get("projects") or {})
    cwd = str(invocation.cwd)
    projects[cwd] = {**(projects.get(cwd) or {}), "hasTrustDialogAccepted": True}
    state["projects"] = projects
    key = invocation.env.get("ANTHROPIC_API_KEY")
    if key:
        responses = dict(state.get("customApiKeyResponses") or {})
        approved = list(responses.get("approved") or [])
        if key[-20:] not in approved:
            approved.append(key[-20:])
        state["customApiKeyResponses"] = {"rejected": [], **responses, "approved": approved}
    return state
