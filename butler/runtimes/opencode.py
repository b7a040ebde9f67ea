"""OpenCode: ``opencode run --format json`` (verified against 1.18.33).

Configuration reaches OpenCode only through ``OPENCODE_CONFIG_CONTENT``: the
owner's provider config (``opencode.json`` in the butler folder, see
:func:`read_owner_config`) with the butler's lockdown on top. Its ``mcp``
table holds exactly the butler's server, whatever the owner wrote. OpenCode's
own config discovery is switched off: ``OPENCODE_DISABLE_PROJECT_CONFIG``
keeps it from reading the butler folder (and its parents) itself, and a fresh
``XDG_CONFIG_HOME`` per run keeps the global config of the session home out.
Sessions, auth and caches live under the session's private XDG data, state
and cache dirs, so ``-s <sessionID>`` resumes.

OpenCode has no system-prompt flag; its real mechanism is an agent's
``prompt``, which replaces the provider's default system prompt. The adapter
defines an agent ``butler`` whose prompt is a ``{file:...}`` reference to the
composed system prompt (so nothing in it is taken for an ``{env:...}``
substitution) and runs with ``--agent butler``. ``--title`` is always given
so OpenCode spends no model call on naming the session.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from butler.jsonfile import read_json_object
from butler.runtimes.base import Command, Invocation, RuntimeFailure, ToolCall, Usage
from butler.runtimes.jsonl import JsonLinesStream, as_int, bare_name
from butler.runtimes.mcp_config import opencode_entry, servers
from butler.runtimes.process import RuntimeProcess, kill_group
from butler.runtimes.subprocess_adapter import SubprocessAdapter

#: The owner's provider config, in the butler folder.
OWNER_CONFIG = "opencode.json"
AGENT = "butler"
#: Offline by default; a butler that declares one of these in [butler.env] overrides it.
DEFAULT_ENV = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    # No ~/.claude skills or CLAUDE.md of the home: the system prompt is butler's.
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    # OpenCode npm-installs its plugin SDK into every config folder it reads;
    # offline, that is a cache lookup instead of a call to the npm registry.
    "npm_config_offline": "true",
}


def read_owner_config(config_dir: Path) -> dict[str, Any]:
    """``opencode.json`` of the butler folder: providers, models, permissions.

    It is where a butler's owner configures what OpenCode needs beyond the
    butler's own settings, usually a ``provider`` table (``{env:VAR}``
    references resolve against the variables declared in ``[butler.env]``).
    Its ``mcp`` table is ignored: a butler session reaches only its butler.
    """
    path = config_dir / OWNER_CONFIG
    return read_json_object(path, "an OpenCode config object", RuntimeFailure)


def build_config(owner: dict[str, Any], invocation: Invocation, prompt_file: Path) -> dict:
    """The whole config of one run: the owner's, locked down to the butler's server."""
    config = json.loads(json.dumps(owner))  # a deep copy; never edit the input
    config.setdefault("$schema", "https://opencode.ai/config.json")
    config["mcp"] = servers(invocation.mcp, opencode_entry)
    agents = config.get("agent") if isinstance(config.get("agent"), dict) else {}
    agent = agents.get(AGENT) if isinstance(agents.get(AGENT), dict) else {}
    agent.update(
        prompt="{file:" + str(prompt_file) + "}",
        mode="primary",
        steps=invocation.max_turns,
    )
    config["agent"] = {**agents, AGENT: agent}
    config["autoupdate"] = False
    config["share"] = "disabled"
    if invocation.model:
        config["model"] = invocation.model
    return config


def build_env(invocation: Invocation, config: dict[str, Any]) -> dict[str, str]:
    """Offline defaults, then the spawner's environment, then the lockdown."""
    home = invocation.home
    return {
        **DEFAULT_ENV,
        **invocation.env,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(invocation.workdir / "xdg-config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "TMPDIR": str(home / "tmp"),
        "OPENCODE_CONFIG_CONTENT": json.dumps(config),
        "OPENCODE_DISABLE_PROJECT_CONFIG": "1",
    }


def build_argv(invocation: Invocation, binary: str) -> list[str]:
    """The whole argv of one run; the prompt itself goes on stdin."""
    title = f"butler {invocation.mcp.name}" if invocation.mcp else "butler"
    argv = [binary, "run", "--format", "json", "--agent", AGENT, "--title", title]
    if invocation.model:
        argv += ["--model", invocation.model]
    if invocation.resume:
        argv += ["--session", invocation.resume]
    return argv + list(invocation.args)


def error_message(error: Any) -> str:
    """OpenCode's ``{"name", "data": {"message", "statusCode"}}`` as one line."""
    if not isinstance(error, dict):
        return str(error)
    data = error.get("data") if isinstance(error.get("data"), dict) else {}
    message = data.get("message") or error.get("message") or json.dumps(error)[:300]
    status = data.get("statusCode")
    name = error.get("name")
    text = f"{name}: {message}" if name else str(message)
    return f"{text} (HTTP {status})" if status else text


class OpenCodeStream(JsonLinesStream):
    """Folds ``opencode run --format json`` events into a result.

    There is no final result event: the run ends when the process exits.
    Usage arrives per step and is summed.
    """

    def __init__(self, server: str | None, on_fatal: Callable[[], None] | None = None) -> None:
        super().__init__()
        self.prefix = f"{server}_" if server else None
        self.on_fatal = on_fatal
        self.step_output = False

    def event(self, event: dict[str, Any]) -> str | None:
        kind = event.get("type")
        part = event.get("part") if isinstance(event.get("part"), dict) else {}
        first = self.session_id is None
        self.session_id = event.get("sessionID") or self.session_id
        if kind == "step_start":
            self.step_output = False
            return "runtime started" if first else None
        if kind == "text" and part.get("text"):
            self.step_output = True
            self.texts.append(str(part["text"]))
        elif kind == "tool_use":
            self.step_output = True
            return self._tool(part)
        elif kind == "step_finish":
            self._step_finish(part)
        elif kind == "error":
            self._fail(f"runtime error: {error_message(event.get('error'))}")
        return None

    def _tool(self, part: dict[str, Any]) -> str:
        name = bare_name(str(part.get("tool") or "?"), self.prefix)
        state = part.get("state") if isinstance(part.get("state"), dict) else {}
        arguments = state.get("input") if isinstance(state.get("input"), dict) else {}
        error = state.get("error") if state.get("status") == "error" else None
        self.calls.append(ToolCall(name, arguments, part.get("callID"), error=error))
        return f"called {name}"

    def _step_finish(self, part: dict[str, Any]) -> None:
        tokens = part.get("tokens") if isinstance(part.get("tokens"), dict) else {}
        cache = tokens.get("cache") if isinstance(tokens.get("cache"), dict) else {}
        step = Usage(
            input_tokens=as_int(tokens.get("input")),
            output_tokens=as_int(tokens.get("output")) + as_int(tokens.get("reasoning")),
            cache_read_tokens=as_int(cache.get("read")),
            cache_write_tokens=as_int(cache.get("write")),
        )
        self.usage = Usage(
            input_tokens=self.usage.input_tokens + step.input_tokens,
            output_tokens=self.usage.output_tokens + step.output_tokens,
            cache_read_tokens=self.usage.cache_read_tokens + step.cache_read_tokens,
            cache_write_tokens=self.usage.cache_write_tokens + step.cache_write_tokens,
        )
        if isinstance(part.get("cost"), int | float):
            self.cost_usd = (self.cost_usd or 0.0) + float(part["cost"])
        self.num_turns = (self.num_turns or 0) + 1
        empty = not self.step_output and step == Usage()
        if part.get("reason") == "unknown" and empty:
            # An answer the provider SDK could not read: OpenCode retries it
            # forever, so the run ends here instead of at the time limit.
            self._fail("runtime error: the model's answer could not be parsed (empty step)")

    def _fail(self, message: str) -> None:
        self.failure = self.failure or message
        if self.on_fatal is not None:
            self.on_fatal()


class OpenCodeAdapter(SubprocessAdapter):
    """OpenCode in ``run`` mode."""

    type_name = "opencode"
    binary_name = "opencode"
    prompt_files = ("AGENTS.md", "CLAUDE.md")
    supports_resume = True
    install_hint = "npm install -g opencode-ai@1.18.33"

    def mcp_config_files(self, invocation: Invocation) -> dict[Path, str]:
        return {}  # in the config its command writes

    def command(self, invocation: Invocation, binary: str) -> Command:
        prompt_file = invocation.workdir / "opencode-system.md"
        config = build_config(read_owner_config(invocation.cwd), invocation, prompt_file)
        return Command(
            argv=build_argv(invocation, binary),
            env=build_env(invocation, config),
            stdin=invocation.prompt,
            files={
                prompt_file: invocation.system_prompt,
                invocation.workdir / "xdg-config" / "opencode" / ".keep": "",
                invocation.home / "tmp" / ".keep": "",
            },
        )

    def parser(self, invocation: Invocation, process: RuntimeProcess) -> OpenCodeStream:
        server = invocation.mcp.name if invocation.mcp else None

        def stop() -> None:
            """End a run the stream already showed failed (OpenCode would not end it)."""
            if process.pgid is not None:
                kill_group(process.pgid, signal.SIGTERM)

        return OpenCodeStream(server, on_fatal=stop)
