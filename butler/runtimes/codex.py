"""OpenAI Codex: ``codex exec --json``.

Codex has no system-prompt flag, so the system prompt is embedded at the head
of the prompt payload (spec 000), sent on stdin. The butler's server reaches
it through ``-c mcp_servers.<name>...`` overrides (streamable HTTP only; no
SSE in Codex), with tool approval granted since ``exec`` never asks. State
lives in ``CODEX_HOME`` inside the session's private home, so resume works
(``codex exec resume <thread_id>``) and nothing touches the user's ``~/.codex``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from butler.runtimes.base import Command, Invocation, ToolCall, Usage
from butler.runtimes.jsonl import JsonLinesStream, as_int
from butler.runtimes.process import RuntimeProcess
from butler.runtimes.subprocess_adapter import SubprocessAdapter

#: Codex calls home for analytics, plugins and apps unless told not to.
HARDENING_ARGS = [
    "-c", "analytics.enabled=false",
    "-c", 'otel.metrics_exporter="none"',
    "--disable", "plugins",
    "--disable", "remote_plugin",
    "--disable", "apps",
]  # fmt: skip


def toml_string(value: str) -> str:
    """A TOML basic string (JSON's escaping is a subset TOML accepts)."""
    return json.dumps(value)


def embed_system_prompt(system_prompt: str, prompt: str) -> str:
    """The prompt payload for a runtime without a system-prompt channel."""
    return f"<system>\n{system_prompt.strip()}\n</system>\n\n{prompt}"


def mcp_overrides(invocation: Invocation) -> list[str]:
    """``-c`` overrides naming exactly this butler's server, approvals granted."""
    mcp = invocation.mcp
    if mcp is None:
        return []
    key = f"mcp_servers.{mcp.name}"
    args = ["-c", f"{key}.url={toml_string(mcp.url)}"]
    args += ["-c", f'{key}.default_tools_approval_mode="approve"']
    if mcp.headers:
        table = ", ".join(f"{toml_string(k)} = {toml_string(v)}" for k, v in mcp.headers.items())
        args += ["-c", f"{key}.http_headers={{ {table} }}"]
    return args


def build_argv(invocation: Invocation, binary: str) -> list[str]:
    """The whole argv of one run; the prompt itself goes on stdin (``-``)."""
    argv = [binary, "exec"]
    if invocation.resume:
        argv += ["resume", "--json"]
    else:
        argv += ["--json", "-C", str(invocation.cwd)]
    argv += ["--skip-git-repo-check", "--ignore-user-config"]
    if invocation.model:
        argv += ["-m", invocation.model]
    argv += mcp_overrides(invocation) + HARDENING_ARGS + list(invocation.args)
    if invocation.resume:
        argv.append(invocation.resume)
    argv.append("-")
    return argv


class CodexStream(JsonLinesStream):
    """Folds ``codex exec --json`` events into a result."""

    def __init__(self, server: str | None) -> None:
        super().__init__()
        self.server = server

    def event(self, event: dict[str, Any]) -> str | None:
        kind = event.get("type")
        if kind == "thread.started":
            self.session_id = event.get("thread_id")
            return "runtime started"
        if kind == "item.completed":
            return self._item(event.get("item") or {})
        if kind == "turn.completed":
            usage = event.get("usage") or {}
            # Codex reports the thread's running total: replace, never sum.
            self.usage = Usage(
                input_tokens=as_int(usage.get("input_tokens")),
                output_tokens=as_int(usage.get("output_tokens")),
                cache_read_tokens=as_int(usage.get("cached_input_tokens")),
                cache_write_tokens=as_int(usage.get("cache_write_input_tokens")),
            )
        elif kind == "turn.failed":
            error = event.get("error") or {}
            self.failure = f"runtime error: {error.get('message') or error}"
        elif kind == "error":
            self.failure = self.failure or f"runtime error: {event.get('message')}"
        return None

    def _item(self, item: dict[str, Any]) -> str | None:
        kind = item.get("type")
        if kind == "agent_message" and item.get("text"):
            self.texts.append(item["text"])
        elif kind == "mcp_tool_call":
            error = item.get("error")
            name = item.get("tool") or "?"
            if item.get("server") not in (None, self.server):
                name = f"{item.get('server')}.{name}"
            arguments = item.get("arguments") if isinstance(item.get("arguments"), dict) else {}
            message = error.get("message") if isinstance(error, dict) else error
            self.calls.append(ToolCall(name, arguments, item.get("id"), error=message))
            return f"called {name}"
        return None


class CodexAdapter(SubprocessAdapter):
    """Codex CLI in ``exec`` mode."""

    type_name = "codex"
    binary_name = "codex"
    prompt_files = ("AGENTS.md", "CLAUDE.md")
    supports_resume = True
    install_hint = "npm install -g @openai/codex@0.169.0"

    def mcp_config_files(self, invocation: Invocation) -> dict[Path, str]:
        return {}  # given as -c overrides

    def command(self, invocation: Invocation, binary: str) -> Command:
        codex_home = invocation.home / ".codex"
        env = {**invocation.env, "HOME": str(invocation.home), "CODEX_HOME": str(codex_home)}
        return Command(
            argv=build_argv(invocation, binary),
            env=env,
            stdin=embed_system_prompt(invocation.system_prompt, invocation.prompt),
            files={codex_home / ".keep": ""},
        )

    def parser(self, invocation: Invocation, process: RuntimeProcess) -> CodexStream:
        return CodexStream(invocation.mcp.name if invocation.mcp else None)
