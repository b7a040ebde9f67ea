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
from pathlib import Path
from typing import Any

from butler.jsonfile import json_object
from butler.runtimes.base import Command, Invocation, RuntimeFailure, Usage
from butler.runtimes.events import (
    Cost,
    Event,
    Failure,
    SessionId,
    Started,
    StepStarted,
    Text,
    Tokens,
    ToolStarted,
    Turns,
    UnreadableStep,
    as_int,
    bare_name,
    mapping,
)
from butler.runtimes.fold import Fold
from butler.runtimes.mcp_config import opencode_entry, servers
from butler.runtimes.process import RuntimeProcess, kill_group
from butler.runtimes.subprocess_adapter import SubprocessAdapter
from butler.security import untrusted

#: The owner's provider config, in the butler folder.
OWNER_CONFIG = "opencode.json"
#: Largest ``opencode.json`` read: a provider table is a few KiB.
MAX_OWNER_CONFIG_BYTES = 1024 * 1024
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
    try:  # a session may write the butler folder: never through a link it planted
        text = untrusted.read_text(config_dir, OWNER_CONFIG, MAX_OWNER_CONFIG_BYTES)
    except (OSError, UnicodeDecodeError) as exc:
        raise RuntimeFailure(f"{path}: cannot read it: {exc}") from None
    return json_object(text, path, "an OpenCode config object", RuntimeFailure)


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


def parse_event(event: dict[str, Any], server: str | None = None) -> list[Event]:
    """One ``opencode run --format json`` event as typed events (pure).

    There is no final result event: the run ends when the process exits.
    Usage and cost arrive per step and are summed by the fold.
    """
    kind = event.get("type")
    part = mapping(event.get("part"))
    found: list[Event] = []
    if event.get("sessionID"):
        found.append(SessionId(str(event["sessionID"])))
    if kind == "step_start":
        found += [Started(), StepStarted()]
    elif kind == "text" and part.get("text"):
        found.append(Text(str(part["text"])))
    elif kind == "tool_use":
        found.append(_tool(part, server))
    elif kind == "step_finish":
        found += _step_finish(part)
    elif kind == "error":
        found.append(Failure(f"runtime error: {error_message(event.get('error'))}"))
    return found


#: OpenCode's stand-in for a call to a tool it does not offer: its input names the tool.
INVALID_TOOL = "invalid"


def _tool(part: dict[str, Any], server: str | None) -> ToolStarted:
    state = mapping(part.get("state"))
    arguments = mapping(state.get("input"))
    tool = str(part.get("tool") or "?")
    error = state.get("error") if state.get("status") == "error" else None
    if tool == INVALID_TOOL and isinstance(arguments.get("tool"), str):
        # Recorded as the call the model made, with OpenCode's word on it.
        tool, error, arguments = arguments["tool"], str(arguments.get("error") or tool), {}
    name = bare_name(tool, f"{server}_" if server else None)
    return ToolStarted(name, arguments, part.get("callID"), error, verb="called")


def _step_finish(part: dict[str, Any]) -> list[Event]:
    tokens = mapping(part.get("tokens"))
    cache = mapping(tokens.get("cache"))
    step = Usage(
        input_tokens=as_int(tokens.get("input")),
        output_tokens=as_int(tokens.get("output")) + as_int(tokens.get("reasoning")),
        cache_read_tokens=as_int(cache.get("read")),
        cache_write_tokens=as_int(cache.get("write")),
    )
    found: list[Event] = [Tokens(step, total=False), Turns(1)]
    if isinstance(part.get("cost"), int | float):
        found.append(Cost(float(part["cost"]), total=False))
    if part.get("reason") == "unknown" and step == Usage():
        # An answer the provider SDK could not read: OpenCode retries it
        # forever, so the run ends here (if the step said nothing) instead of
        # at the time limit.
        found.append(UnreadableStep())
    return found


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

    def parser(self, invocation: Invocation, process: RuntimeProcess) -> Fold:
        server = invocation.mcp.name if invocation.mcp else None

        def stop() -> None:
            """End a run the stream already showed failed (OpenCode would not end it)."""
            if process.pgid is not None:
                kill_group(process.pgid, signal.SIGTERM)

        return Fold(parse_event, server, on_failure=stop)
