"""Gemini CLI: ``gemini --output-format stream-json`` (verified against 0.61.0).

The first design had the adapter pass ``--system-prompt``; Gemini CLI 0.61 has no
such flag. The system prompt goes the way the real CLI takes one: a file named
by ``GEMINI_SYSTEM_MD``, which replaces Gemini's whole built-in system prompt.

The prompt goes on stdin (``--prompt ""`` makes the run headless and Gemini
appends stdin to it), so its size is not bound by the argv limit and it does
not show in the process list. ``GEMINI_CLI_HOME`` is the session's private
home; its user settings are rewritten before each run to hold exactly the
butler's MCP server (trusted, streamable HTTP), an auth type that works
headless, and telemetry, usage statistics and auto-update off. The owner's
other settings seeded into the home are kept. ``--allowed-mcp-server-names``
admits only the butler's server, so nothing an extension or a system
settings file adds is connected. ``--skip-trust`` trusts the butler folder
for the run without loading its ``.gemini/settings.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from butler.jsonfile import json_object
from butler.runtimes.base import Command, Invocation, RuntimeFailure, Usage
from butler.runtimes.events import (
    Ended,
    Event,
    Failure,
    Model,
    Notice,
    SessionId,
    Started,
    Text,
    Tokens,
    ToolFailed,
    ToolStarted,
    as_int,
    bare_name,
    error_text,
    mapping,
)
from butler.runtimes.fold import Fold
from butler.runtimes.jsonl import stderr_summary
from butler.runtimes.mcp_config import gemini_entry, servers
from butler.runtimes.process import ProcessOutcome, RuntimeProcess
from butler.runtimes.subprocess_adapter import SubprocessAdapter
from butler.security import untrusted

#: A Gemini runtime never sees the Anthropic key (docs/runtimes.md).
DROPPED_ENV = ("ANTHROPIC_API_KEY",)
#: Gemini's user settings in the session home, and the most of them read.
SETTINGS = ".gemini/settings.json"
MAX_SETTINGS_BYTES = 1024 * 1024
#: Tries of one model request (Gemini's default is 10, 5 s to 30 s apart: minutes past
#: most session time limits, so the user would see "timeout" instead of the model's error).
MAX_ATTEMPTS = 3
#: Gemini CLI's own exit codes (``FatalError`` subclasses), as readable reasons.
EXIT_REASONS = {
    41: "authentication failed (expected GEMINI_API_KEY, or Vertex AI variables, "
    "declared in [butler.env])",
    42: "invalid input",
    44: "sandbox error",
    52: "configuration error",
    53: "max turns reached",
    54: "a tool failed",
    55: "the working folder is not trusted",
    130: "cancelled",
}


def http_status_of(code: int) -> int | None:
    """The HTTP status behind an exit code: Gemini exits with ``status & 0xff`` on API errors."""
    if 144 <= code <= 255:
        return code + 256
    return None


def describe_exit(code: int) -> str:
    """A readable reason for a Gemini exit code."""
    if code in EXIT_REASONS:
        return EXIT_REASONS[code]
    status = http_status_of(code)
    if status is not None:
        return f"model API error (HTTP {status})"
    return f"exit status {code}"


def auth_type(env: dict[str, str], existing: str | None) -> str:
    """The auth type to run headless with; the owner's seeded choice wins."""
    if existing:
        return existing
    if env.get("GOOGLE_GENAI_USE_VERTEXAI", "").lower() in ("1", "true"):
        return "vertex-ai"
    # With GOOGLE_GEMINI_BASE_URL alone Gemini picks "gateway" auth, which
    # it refuses headless (exit 41).
    return "gemini-api-key"


def _section(settings: dict[str, Any], key: str) -> dict[str, Any]:
    value = settings.get(key)
    if not isinstance(value, dict):
        value = {}
        settings[key] = value
    return value


def build_settings(existing: dict[str, Any], invocation: Invocation) -> dict[str, Any]:
    """The user settings of one run: the owner's, with the butler's lockdown on top."""
    settings = json.loads(json.dumps(existing))  # a deep copy; never edit the input
    auth = _section(_section(settings, "security"), "auth")
    auth["selectedType"] = auth_type(invocation.env, auth.get("selectedType"))
    _section(settings, "privacy")["usageStatisticsEnabled"] = False
    _section(settings, "telemetry")["enabled"] = False
    general = _section(settings, "general")
    general["enableAutoUpdate"] = False
    general["enableAutoUpdateNotification"] = False
    general["maxAttempts"] = min(as_int(general.get("maxAttempts")) or MAX_ATTEMPTS, MAX_ATTEMPTS)
    _section(settings, "model")["maxSessionTurns"] = invocation.max_turns
    settings["mcpServers"] = servers(invocation.mcp, gemini_entry)
    return settings


def build_env(invocation: Invocation, system_md: Path) -> dict[str, str]:
    """The spawner's environment minus the Anthropic key, plus a private home."""
    env = {k: v for k, v in invocation.env.items() if k not in DROPPED_ENV}
    home = str(invocation.home)
    env.update(
        HOME=home,
        GEMINI_CLI_HOME=home,
        GEMINI_SYSTEM_MD=str(system_md),
        # Crash reports go to the OS temp folder; keep them with the session.
        TMPDIR=str(invocation.home / "tmp"),
        NO_COLOR="1",
    )
    return env


def build_argv(invocation: Invocation, binary: str) -> list[str]:
    """The whole argv of one run; the prompt itself goes on stdin."""
    argv = [binary, "--prompt", "", "--output-format", "stream-json"]
    argv += ["--approval-mode", "yolo", "--skip-trust"]
    # An empty allow-list admits every server; with no endpoint, admit a name nothing has.
    allowed = invocation.mcp.name if invocation.mcp else "none"
    argv += ["--allowed-mcp-server-names", allowed]
    if invocation.model:
        argv += ["--model", invocation.model]
    if invocation.resume:
        argv += ["--resume", invocation.resume]
    return argv + list(invocation.args)


def parse_event(event: dict[str, Any], server: str | None = None) -> list[Event]:
    """One ``--output-format stream-json`` event as typed events (pure)."""
    kind = event.get("type")
    if kind == "init":
        found: list[Event] = [Started()]
        if event.get("session_id"):
            found.append(SessionId(str(event["session_id"])))
        model = event.get("model")
        if isinstance(model, str) and model and model != "auto":
            found.append(Model(model))
        return found
    if kind == "message" and event.get("role") == "assistant":
        return [Text(str(event.get("content") or ""), delta=bool(event.get("delta")))]
    if kind == "tool_use":
        name = bare_name(str(event.get("tool_name") or "?"), f"mcp_{server}_" if server else None)
        call_id = event.get("tool_id")
        return [ToolStarted(name, mapping(event.get("parameters")), call_id)]
    if kind == "tool_result" and event.get("status") != "success":
        return [ToolFailed(str(event.get("tool_id")), error_text(event.get("error")))]
    if kind == "error":
        return [Notice(str(event.get("message") or event))]
    if kind == "result":
        return _result(event)
    return []


def _result(event: dict[str, Any]) -> list[Event]:
    stats = mapping(event.get("stats"))
    usage = Usage(
        input_tokens=as_int(stats.get("input_tokens")),
        output_tokens=as_int(stats.get("output_tokens")),
        cache_read_tokens=as_int(stats.get("cached")),
    )
    found: list[Event] = [Tokens(usage), Ended()]
    model = main_model(mapping(stats.get("models")))
    if model:
        found.append(Model(model))
    if event.get("status") == "error":
        error = event.get("error")
        message = error.get("message") if isinstance(error, dict) else error
        found.append(Failure(f"runtime error: {message}" if message else None, replaces=True))
    return found


def main_model(models: dict[str, Any]) -> str | None:
    """The model that did most of the work (with ``auto`` a small router model runs too)."""
    tokens = {name: as_int(mapping(stats).get("total_tokens")) for name, stats in models.items()}
    best = max(tokens, key=tokens.__getitem__, default=None)
    return str(best) if best else None


class GeminiAdapter(SubprocessAdapter):
    """Gemini CLI in headless mode."""

    type_name = "gemini"
    binary_name = "gemini"
    # Gemini loads every GEMINI.md it finds as context and 0.61 has no switch to
    # stop it, so the system prompt comes from CLAUDE.md when there is one: a
    # GEMINI.md beside it then reaches the model once, as Gemini's own context.
    prompt_files = ("CLAUDE.md", "GEMINI.md")
    supports_resume = True
    install_hint = "npm install -g @google/gemini-cli@0.61.0"

    def mcp_config_files(self, invocation: Invocation) -> dict[Path, str]:
        return {}  # in the settings file its command writes

    def command(self, invocation: Invocation, binary: str) -> Command:
        settings_path = invocation.home / SETTINGS
        system_md = invocation.workdir / "gemini-system.md"
        settings = build_settings(read_settings(invocation.home), invocation)
        return Command(
            argv=build_argv(invocation, binary),
            env=build_env(invocation, system_md),
            stdin=invocation.prompt,
            files={
                settings_path: json.dumps(settings, indent=2) + "\n",
                system_md: invocation.system_prompt,
                invocation.home / "tmp" / ".keep": "",
            },
        )

    def parser(self, invocation: Invocation, process: RuntimeProcess) -> Fold:
        return Fold(parse_event, invocation.mcp.name if invocation.mcp else None)

    def exit_error(self, outcome: ProcessOutcome) -> str:
        detail = stderr_summary(outcome.stderr)
        reason = describe_exit(outcome.returncode)
        return f"gemini failed: {reason}" + (f": {detail}" if detail else "")


def read_settings(home: Path) -> dict[str, Any]:
    """The user settings seeded into the session home, if any.

    A resumed home is the runtime's own: its settings are read never through a link,
    so one to a file of the owner's is not copied into the settings written back.
    """
    try:
        text = untrusted.read_text(home, SETTINGS, MAX_SETTINGS_BYTES)
    except (OSError, UnicodeDecodeError) as exc:
        raise RuntimeFailure(f"{home / SETTINGS}: cannot read it: {exc}") from None
    return json_object(
        text, home / SETTINGS, "Gemini user settings as a JSON object", RuntimeFailure
    )
