"""GitHub Copilot CLI: ``copilot --output-format json`` (verified against 1.0.102).

The prompt goes on stdin, which makes the run non-interactive like ``-p``
without putting the prompt on the command line. ``--allow-all-tools`` is
required headless. The butler's server arrives with
``--additional-mcp-config`` (tools ``["*"]``); that flag only augments
``$COPILOT_HOME/mcp-config.json``, so the session's private copy of that file
is emptied before each run, and the built-in GitHub MCP servers are
disabled: the butler's server is the only one.

Copilot has a custom-instructions channel, but it cannot be used alone: it
always loads ``CLAUDE.md``/``AGENTS.md`` from the butler folder and its git
root as well. The adapter turns all of that off (``--no-custom-instructions``)
and embeds the composed system prompt at the head of the prompt, as spec 000
does for Codex. Token counts are only in the ``--usage-output-file`` report,
read after the run; Copilot reports premium requests, not dollars, so there
is no cost. The native binary unpacks itself (~235 MB) into
``$XDG_CACHE_HOME/copilot`` on first start, so that cache is shared by every
session under butler's data folder instead of living in each session home.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from butler.runtimes.base import (
    Command,
    Invocation,
    McpEndpoint,
    ProgressSink,
    RuntimeFailure,
    RuntimeResult,
    ToolCall,
    Usage,
)
from butler.runtimes.codex import embed_system_prompt
from butler.runtimes.jsonl import JsonLinesStream, as_int
from butler.runtimes.mcp_config import claude_entry, servers
from butler.runtimes.process import RuntimeProcess
from butler.runtimes.subprocess_adapter import SubprocessAdapter

USAGE_FILE = "copilot-usage.json"
#: Flags that keep Copilot from phoning home, updating itself or waiting on a user.
HARDENING_ARGS = [
    "--disable-builtin-mcps",
    "--no-custom-instructions",
    "--no-auto-update",
    "--disable-client-telemetry",
    "--no-ask-user",
    "--no-color",
]


def mcp_config(invocation: Invocation) -> dict[str, Any]:
    """``--additional-mcp-config``: exactly the butler's server, every tool allowed."""

    def entry(mcp: McpEndpoint) -> dict[str, Any]:
        return {**claude_entry(mcp), "headers": dict(mcp.headers), "tools": ["*"]}

    return {"mcpServers": servers(invocation.mcp, entry)}


def build_argv(invocation: Invocation, binary: str) -> list[str]:
    """The whole argv of one run; the prompt itself goes on stdin."""
    argv = [binary, "--output-format", "json", "--allow-all-tools"]
    argv += ["--additional-mcp-config", json.dumps(mcp_config(invocation))]
    argv += ["--usage-output-file", str(invocation.workdir / USAGE_FILE)]
    argv += HARDENING_ARGS
    if invocation.model:
        argv += ["--model", invocation.model]
    if invocation.resume:
        argv.append(f"--resume={invocation.resume}")
    return argv + list(invocation.args)


def build_env(invocation: Invocation) -> dict[str, str]:
    """The spawner's environment plus a private Copilot home and the shared package cache."""
    home = invocation.home
    return {
        **invocation.env,
        "HOME": str(home),
        "COPILOT_HOME": str(home / ".copilot"),
        "XDG_CACHE_HOME": str(invocation.cache_dir or invocation.workdir / "cache"),
        "TMPDIR": str(home / "tmp"),
        "COPILOT_AUTO_UPDATE": "false",
        "NO_COLOR": "1",
    }


def parse_usage_report(report: dict[str, Any]) -> Usage:
    """Token counts of a ``--usage-output-file`` report, summed over its models."""
    totals = [0, 0, 0, 0]
    metrics = report.get("modelMetrics") if isinstance(report.get("modelMetrics"), dict) else {}
    for model in metrics.values():
        usage = model.get("usage") if isinstance(model, dict) else None
        if not isinstance(usage, dict):
            continue
        keys = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")
        for i, key in enumerate(keys):
            totals[i] += as_int(usage.get(key))
    return Usage(*totals)


class CopilotStream(JsonLinesStream):
    """Folds ``copilot --output-format json`` events into a result."""

    def __init__(self, server: str | None) -> None:
        super().__init__()
        self.server = server
        self.pending: dict[str, int] = {}
        self.exit_code: int | None = None

    def event(self, event: dict[str, Any]) -> str | None:
        kind = event.get("type")
        data = event.get("data") if isinstance(event.get("data"), dict) else {}
        if kind == "assistant.turn_start":
            first = self.num_turns is None
            self.num_turns = (self.num_turns or 0) + 1
            return "runtime started" if first else None
        if kind == "assistant.message" and str(data.get("content") or "").strip():
            self.texts.append(str(data["content"]))
        elif kind == "tool.execution_start":
            return self._tool_start(data)
        elif kind == "tool.execution_complete":
            self._tool_complete(data)
        elif kind == "session.error":
            status = data.get("statusCode")
            suffix = f" (HTTP {status})" if status and str(status) not in str(data) else ""
            message = data.get("message") or data.get("errorType") or "session error"
            self.failure = self.failure or f"runtime error: {message}{suffix}"
        elif kind == "result":
            self.session_id = event.get("sessionId") or self.session_id
            self.exit_code = event.get("exitCode")
        return None

    def _tool_start(self, data: dict[str, Any]) -> str:
        name = str(data.get("toolName") or "?")
        if self.server and data.get("mcpServerName") == self.server and data.get("mcpToolName"):
            name = str(data["mcpToolName"])
        arguments = data.get("arguments") if isinstance(data.get("arguments"), dict) else {}
        call_id = data.get("toolCallId")
        if call_id:
            self.pending[str(call_id)] = len(self.calls)
        self.calls.append(ToolCall(name, arguments, call_id))
        return f"calling {name}"

    def _tool_complete(self, data: dict[str, Any]) -> None:
        index = self.pending.pop(str(data.get("toolCallId")), None)
        if index is None or data.get("success", True):
            return
        call = self.calls[index]
        error = data.get("error")
        message = (error.get("message") if isinstance(error, dict) else error) or "tool failed"
        self.calls[index] = ToolCall(call.name, call.arguments, call.call_id, str(message)[:500])


class CopilotAdapter(SubprocessAdapter):
    """GitHub Copilot CLI in non-interactive mode."""

    type_name = "copilot"
    binary_name = "copilot"
    prompt_files = ("AGENTS.md", "CLAUDE.md")
    supports_resume = True
    install_hint = "npm install -g @github/copilot@1.0.102"

    def mcp_config_files(self, invocation: Invocation) -> dict[Path, str]:
        return {}  # given in --additional-mcp-config

    def command(self, invocation: Invocation, binary: str) -> Command:
        return Command(
            argv=build_argv(invocation, binary),
            env=build_env(invocation),
            stdin=embed_system_prompt(invocation.system_prompt, invocation.prompt),
            files={
                # The user-level servers of the seeded home must not join the run.
                invocation.home / ".copilot" / "mcp-config.json": json.dumps({"mcpServers": {}})
                + "\n",
                invocation.home / "tmp" / ".keep": "",
            },
        )

    def parser(self, invocation: Invocation, process: RuntimeProcess) -> CopilotStream:
        return CopilotStream(invocation.mcp.name if invocation.mcp else None)

    async def invoke(
        self, invocation: Invocation, progress: ProgressSink | None = None
    ) -> RuntimeResult:
        report = invocation.workdir / USAGE_FILE
        try:
            result = await super().invoke(invocation, progress)
        except RuntimeFailure as exc:
            exc.partial.usage = read_usage(report) or exc.partial.usage
            raise
        result.usage = read_usage(report) or result.usage
        return result


def read_usage(path: Path) -> Usage | None:
    """The usage report Copilot wrote at exit, if it got that far."""
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return parse_usage_report(report) if isinstance(report, dict) else None
