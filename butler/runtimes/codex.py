"""OpenAI Codex: ``codex exec --json``.

Codex has no system-prompt flag, so the system prompt is embedded at the head
of the prompt payload (spec 000), sent on stdin. The butler's server reaches
it through ``-c mcp_servers.<name>...`` overrides (streamable HTTP only; no
SSE in Codex), with tool approval granted since ``exec`` never asks. State
lives in ``CODEX_HOME`` inside the session's private home, so resume works
(``codex exec resume <thread_id>``) and nothing touches the user's ``~/.codex``.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from butler.runtimes.base import Command, Invocation, Usage
from butler.runtimes.events import (
    Event,
    Failure,
    Notice,
    SessionId,
    Started,
    Text,
    Tokens,
    ToolStarted,
    as_int,
    mapping,
)
from butler.runtimes.fold import Fold
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


#: Where codex finds the session's bearer token: its environment, never its argv (``ps``).
TOKEN_ENV = "BUTLER_MCP_TOKEN"


def bearer_token(headers: dict[str, str]) -> tuple[str | None, dict[str, str]]:
    """The bearer token among ``headers``, and the other headers."""
    rest = {k: v for k, v in headers.items() if k.lower() != "authorization"}
    value = next((v for k, v in headers.items() if k.lower() == "authorization"), "")
    scheme, _, token = value.partition(" ")
    return (token if scheme.lower() == "bearer" and token else None), rest


def mcp_overrides(invocation: Invocation) -> list[str]:
    """``-c`` overrides naming exactly this butler's server, approvals granted."""
    mcp = invocation.mcp
    if mcp is None:
        return []
    key = f"mcp_servers.{mcp.name}"
    args = ["-c", f"{key}.url={toml_string(mcp.url)}"]
    args += ["-c", f'{key}.default_tools_approval_mode="approve"']
    token, headers = bearer_token(dict(mcp.headers))
    if token:
        args += ["-c", f"{key}.bearer_token_env_var={toml_string(TOKEN_ENV)}"]
    if headers:
        table = ", ".join(f"{toml_string(k)} = {toml_string(v)}" for k, v in headers.items())
        args += ["-c", f"{key}.http_headers={{ {table} }}"]
    return args


#: Retries of one model request and of a broken stream. Codex's defaults (4 and 5,
#: multiplied) make 30 requests of a failing model API before it gives up.
MAX_RETRIES = 2
RETRY_KEYS = ("request_max_retries", "stream_max_retries")


def configured_provider(args: tuple[str, ...] | list[str]) -> str | None:
    """The ``model_provider`` the owner's ``-c`` overrides choose, if any."""
    found = None
    for flag, value in itertools.pairwise(args):
        if flag in ("-c", "--config") and value.startswith("model_provider="):
            found = value.partition("=")[2].strip().strip("\"'")
    return found


def retry_caps(args: tuple[str, ...] | list[str]) -> list[str]:
    """``-c`` overrides capping the retries of the owner's own model provider.

    They follow the owner's args so they merge into the provider table defined
    there. Codex refuses any override of its built-in providers (``openai``),
    so those keep Codex's own retries; an owner who sets the retry keys wins.
    """
    provider = configured_provider(args)
    if not provider or any(key in arg for arg in args for key in RETRY_KEYS):
        return []
    if not any(arg.startswith(f"model_providers.{provider}") for arg in args):
        return []
    table = f"model_providers.{provider}"
    return [item for key in RETRY_KEYS for item in ("-c", f"{table}.{key}={MAX_RETRIES}")]


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
    argv += retry_caps(invocation.args)
    if invocation.resume:
        argv.append(invocation.resume)
    argv.append("-")
    return argv


#: Codex's built-in tools, by item type, with the fields that say what each did.
BUILT_IN = {
    "command_execution": ("command",),
    "file_change": ("changes",),
    "web_search": ("query",),
}


def parse_event(event: dict[str, Any], server: str | None = None) -> list[Event]:
    """One ``codex exec --json`` event as typed events (pure)."""
    kind = event.get("type")
    if kind == "thread.started":
        thread = event.get("thread_id")
        return [Started(), SessionId(str(thread))] if thread else [Started()]
    if kind == "item.completed":
        return _item(mapping(event.get("item")), server)
    if kind == "turn.completed":
        usage = mapping(event.get("usage"))
        # Codex reports the thread's running total: replace, never sum.
        return [
            Tokens(
                Usage(
                    input_tokens=as_int(usage.get("input_tokens")),
                    output_tokens=as_int(usage.get("output_tokens")),
                    cache_read_tokens=as_int(usage.get("cached_input_tokens")),
                    cache_write_tokens=as_int(usage.get("cache_write_input_tokens")),
                )
            )
        ]
    if kind == "turn.failed":
        error = event.get("error") or {}
        message = error.get("message") if isinstance(error, dict) else None
        return [Failure(f"runtime error: {explain(str(message or error))}", replaces=True)]
    if kind == "error":
        message = str(event.get("message"))
        # A retry it announces is not the end: a turn that then completes succeeded, and
        # one that does not ends in turn.failed, which carries the real reason.
        if message.startswith("Reconnecting"):
            return [Notice(message)]
        return [Failure(f"runtime error: {message}")]
    return []


#: What Codex says, instead of the server's text, when the model API answers HTTP 500
#: (for other statuses it shows the server's text).
CANNED_500 = "We’re currently experiencing high demand, which may cause temporary errors."


def explain(message: str) -> str:
    """Codex's failure text, with what its canned HTTP 500 text really means."""
    if message.strip() == CANNED_500:
        return (
            f"{message} (Codex's text for an HTTP 500 from the model API; "
            "it does not show the server's own)"
        )
    return message


def _item(item: dict[str, Any], server: str | None) -> list[Event]:
    kind = item.get("type")
    if kind == "agent_message" and item.get("text"):
        return [Text(str(item["text"]))]
    if kind == "mcp_tool_call":
        error = item.get("error")
        name = str(item.get("tool") or "?")
        if item.get("server") not in (None, server):
            name = f"{item.get('server')}.{name}"
        message = error.get("message") if isinstance(error, dict) else error
        arguments = mapping(item.get("arguments"))
        return [ToolStarted(name, arguments, item.get("id"), message, verb="called")]
    if kind in BUILT_IN:
        return [_built_in(str(kind), item)]
    return []


def _built_in(kind: str, item: dict[str, Any]) -> ToolStarted:
    """A tool of Codex's own (a shell command, a file edit, a search), recorded too."""
    arguments = {key: item[key] for key in BUILT_IN[kind] if key in item}
    error = None
    if item.get("status") == "failed" or item.get("exit_code") not in (None, 0):
        error = f"{kind} failed (exit code {item.get('exit_code')})"
    return ToolStarted(kind, arguments, item.get("id"), error, verb="ran")


class CodexAdapter(SubprocessAdapter):
    """Codex CLI in ``exec`` mode."""

    type_name = "codex"
    binary_name = "codex"
    prompt_files = ("AGENTS.md", "CLAUDE.md")
    supports_resume = True
    cumulative_on_resume = frozenset(
        {"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"}
    )
    install_hint = "npm install -g @openai/codex@0.169.0"

    def mcp_config_files(self, invocation: Invocation) -> dict[Path, str]:
        return {}  # given as -c overrides

    def command(self, invocation: Invocation, binary: str) -> Command:
        codex_home = invocation.home / ".codex"
        env = {**invocation.env, "HOME": str(invocation.home), "CODEX_HOME": str(codex_home)}
        token, _ = bearer_token(dict(invocation.mcp.headers)) if invocation.mcp else (None, {})
        if token:
            env[TOKEN_ENV] = token
        return Command(
            argv=build_argv(invocation, binary),
            env=env,
            stdin=embed_system_prompt(invocation.system_prompt, invocation.prompt),
            files={codex_home / ".keep": ""},
        )

    def parser(self, invocation: Invocation, process: RuntimeProcess) -> Fold:
        return Fold(parse_event, invocation.mcp.name if invocation.mcp else None)
