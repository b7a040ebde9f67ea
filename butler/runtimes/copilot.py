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
    Usage,
)
from butler.runtimes.codex import embed_system_prompt
from butler.runtimes.events import (
    Event,
    Failure,
    Model,
    SessionId,
    Started,
    Text,
    ToolFailed,
    ToolStarted,
    Turns,
    as_int,
    error_text,
    mapping,
)
from butler.runtimes.fold import Fold
from butler.runtimes.mcp_config import claude_entry, servers
from butler.runtimes.process import RuntimeProcess
from butler.runtimes.subprocess_adapter import SubprocessAdapter
from butler.security import untrusted

USAGE_FILE = "copilot-usage.json"
#: Largest usage report read (one entry per model).
MAX_REPORT_BYTES = 1024 * 1024
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


def permission_args(invocation: Invocation) -> list[str]:
    """Every tool allowed (required headless); in the butler's jail, every path too.

    Copilot refuses a whole shell command that names a path outside its folder
    (``/usr/bin/python3 skills/...``) when no one is there to approve it; inside
    the jail, the jail decides what a path may reach. Unjailed, Copilot's own
    guard stays.
    """
    jailed = ["--allow-all-paths"] if invocation.sandbox is not None else []
    return ["--allow-all-tools", *jailed]


def build_argv(invocation: Invocation, binary: str) -> list[str]:
    """The whole argv of one run; the prompt itself goes on stdin."""
    argv = [binary, "--output-format", "json", *permission_args(invocation)]
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


def parse_event(event: dict[str, Any], server: str | None = None) -> list[Event]:
    """One ``copilot --output-format json`` event as typed events (pure)."""
    kind = event.get("type")
    data = mapping(event.get("data"))
    found: list[Event] = []
    if isinstance(data.get("model"), str) and data["model"]:
        found.append(Model(data["model"]))
    if kind == "assistant.turn_start":
        found += [Started(), Turns(1)]
    elif kind == "assistant.message":
        found.append(Text(str(data.get("content") or "")))
    elif kind == "tool.execution_start":
        found.append(_tool_start(data, server))
    elif kind == "tool.execution_complete" and not data.get("success", True):
        found.append(ToolFailed(str(data.get("toolCallId")), error_text(data.get("error"))))
    elif kind == "session.error":
        status = data.get("statusCode")
        suffix = f" (HTTP {status})" if status and str(status) not in str(data) else ""
        message = data.get("message") or data.get("errorType") or "session error"
        found.append(Failure(f"runtime error: {message}{suffix}"))
    elif kind == "result" and event.get("sessionId"):
        found.append(SessionId(str(event["sessionId"])))
    return found


def _tool_start(data: dict[str, Any], server: str | None) -> ToolStarted:
    name = str(data.get("toolName") or "?")
    if server and data.get("mcpServerName") == server and data.get("mcpToolName"):
        name = str(data["mcpToolName"])
    call_id = data.get("toolCallId")
    return ToolStarted(name, mapping(data.get("arguments")), str(call_id) if call_id else None)


class CopilotAdapter(SubprocessAdapter):
    """GitHub Copilot CLI in non-interactive mode."""

    type_name = "copilot"
    binary_name = "copilot"
    prompt_files = ("AGENTS.md", "CLAUDE.md")
    supports_resume = True
    cumulative_on_resume = frozenset(
        {"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"}
    )
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

    def parser(self, invocation: Invocation, process: RuntimeProcess) -> Fold:
        return Fold(parse_event, invocation.mcp.name if invocation.mcp else None)

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
    try:  # the runtime wrote it: never through a link, never a FIFO, bounded
        report = json.loads(untrusted.read(path.parent, path.name, MAX_REPORT_BYTES))
    except (OSError, ValueError):
        return None
    return parse_usage_report(report) if isinstance(report, dict) else None
