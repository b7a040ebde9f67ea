"""OpenAI Codex: ``codex exec --json``.

Codex has no system-prompt flag, so the system prompt is embedded at the head
of the prompt payload (spec 000), sent on stdin. The butler's server reaches
it through ``-c mcp_servers.<name>...`` overrides (streamable HTTP only; no
SSE in Codex), with tool approval granted since ``exec`` never asks. State
lives in ``CODEX_HOME`` inside the session's private home, so resume works
(``codex exec resume <thread_id>``) and nothing touches the user's ``~/.codex``.
In the butler's jail Codex's own sandbox is off (the jail is the boundary);
unjailed, it keeps it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from pathlib import Path
from typing import Any

from butler.runtimes.base import (
    Command,
    Invocation,
    ProgressSink,
    RuntimeResult,
    ToolCall,
    Usage,
)
from butler.runtimes.codex_state import adopt_rollouts
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


#: Seconds Codex waits for the butler's server to list its tools (its default is 10).
MCP_STARTUP_TIMEOUT_S = 30


def mcp_overrides(invocation: Invocation) -> list[str]:
    """``-c`` overrides naming exactly this butler's server, approvals granted.

    The server is ``required``: Codex then waits for its tool list before the
    first model request (otherwise it asks the model at once and offers the
    tools of a server that answered late only on later turns, so a slow first
    ``tools/list`` left a session without its butler's tools) and fails the run
    when the server cannot be reached, instead of running without it.
    """
    mcp = invocation.mcp
    if mcp is None:
        return []
    key = f"mcp_servers.{mcp.name}"
    args = ["-c", f"{key}.url={toml_string(mcp.url)}"]
    args += ["-c", f'{key}.default_tools_approval_mode="approve"']
    args += ["-c", f"{key}.required=true"]
    args += ["-c", f"{key}.startup_timeout_sec={MCP_STARTUP_TIMEOUT_S}"]
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


#: Codex's own sandbox off, for a run inside the butler's jail. Codex would start a
#: bubblewrap of its own for every shell command, and the jail's system-call filter
#: refuses it the new user namespace, so no command could run; inside the jail, the
#: jail is the boundary (Codex's documented setting for an externally sandboxed run).
#: A config key, not ``-s``: ``exec resume`` takes no ``-s``.
SANDBOX_OFF = ["-c", 'sandbox_mode="danger-full-access"']


def build_argv(invocation: Invocation, binary: str) -> list[str]:
    """The whole argv of one run; the prompt itself goes on stdin (``-``).

    Unjailed, Codex keeps its own sandbox (its default, read-only with no
    network for shell commands): then it is the only boundary there is.
    """
    argv = [binary, "exec"]
    if invocation.resume:
        argv += ["resume", "--json"]
    else:
        argv += ["--json", "-C", str(invocation.cwd)]
    argv += ["--skip-git-repo-check", "--ignore-user-config"]
    if invocation.model:
        argv += ["-m", invocation.model]
    argv += mcp_overrides(invocation) + HARDENING_ARGS
    if invocation.sandbox is not None:
        argv += SANDBOX_OFF
    argv += list(invocation.args)
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


#: Codex's log line for a call to a tool it does not offer (nothing of it is on stdout).
UNSUPPORTED_CALL = re.compile(r"codex_core::tools::router: error=unsupported call: (\S{1,300})")


def unsupported_calls(stderr: str, server: str | None) -> list[ToolCall]:
    """The calls to tools Codex never offered, from its stderr, with Codex's error.

    Codex names them by namespace and tool run together (``mcp__<server>`` and
    the tool's name); the butler's own server's prefix is dropped.
    """
    prefix = f"mcp__{server}" if server else None
    calls = []
    for name in UNSUPPORTED_CALL.findall(stderr):
        error = f"unsupported call: {name}"
        if prefix and name.startswith(prefix) and len(name) > len(prefix):
            name = name[len(prefix) :]
        calls.append(ToolCall(name, {}, None, error))
    return calls


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

    async def invoke(
        self, invocation: Invocation, progress: ProgressSink | None = None
    ) -> RuntimeResult:
        if invocation.resume and invocation.sandbox is None:
            # Unjailed, the copied home names the parent's transcripts (see codex_state).
            await asyncio.to_thread(adopt_rollouts, invocation.home / ".codex")
        return await super().invoke(invocation, progress)

    def read_stderr(self, invocation: Invocation, result: RuntimeResult, stderr: str) -> None:
        """Calls to tools Codex did not offer are only in its log: record them too."""
        server = invocation.mcp.name if invocation.mcp else None
        result.tool_calls += unsupported_calls(stderr, server)
