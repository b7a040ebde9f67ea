"""The user's ask/chat configuration: which sources exist and which agent answers.

One TOML file, ``config.toml`` in the user config folder
(platformdirs' ``user_config_dir("butler")``, or ``BUTLER_CONFIG_HOME``)::

    [sources]
    langchain = "~/src/langchain"        # a git checkout
    notes = "~/notes"                     # any folder
    readme = "/path/to/README.md"         # a single file

    [agents]
    default_agent = "claude-code"
    ask_timeout_seconds = 600

    [agents.claude-code]
    ask = ["claude", "-p", "--strict-mcp-config", "--", "{prompt}"]
    chat = ["claude", "--strict-mcp-config"]

    [sandbox]                             # the jail the agent runs in
    mode = "auto"
    allow_hosts = []

Commands are argv lists, never shell strings: each element may hold the
placeholders in :data:`ASK_PLACEHOLDERS` / :data:`CHAT_PLACEHOLDERS`, which are
replaced inside that element only. Built-in agents (``claude-code``) apply
unless the file redefines them; the built-in ``claude-code`` runs the Claude
Code bundled in claude-agent-sdk (the version sessions use), not one on PATH.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs
from pydantic import ValidationError

from butler.config import SandboxConfig
from butler.config.errors import describe
from butler.errors import ConfigError, UserError
from butler.runtimes.command import PLACEHOLDER
from butler.tomlfile import read_toml

CONFIG_FILE = "config.toml"

#: Placeholders an ask command may use: the prompt text, the prompt.md path,
#: the empty ``.mcp.json`` and the temp folder the agent runs in.
ASK_PLACEHOLDERS = frozenset({"prompt", "prompt_file", "mcp_config", "workdir"})
#: chat writes no prompt, so only the folder and the MCP config exist.
CHAT_PLACEHOLDERS = frozenset({"mcp_config", "workdir"})

# A source name becomes a file name in the temp folder: keep it one plain path
# component that cannot shadow the files butler writes there.
SOURCE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
RESERVED_NAMES = frozenset({"prompt.md", "mcp.json", "opencode.json"})

#: Read-only tools, allowed up front: sources are symlinks leading outside the
#: working folder, and Claude Code asks before reading through them otherwise.
CLAUDE_READ_TOOLS = "Read,Glob,Grep"


def bundled_claude() -> str:
    """The Claude Code binary inside claude-agent-sdk, the one butler's sessions run.

    Found without importing the SDK (slow to import); ``claude`` on PATH when absent.
    """
    spec = importlib.util.find_spec("claude_agent_sdk")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(folder) / "_bundled" / "claude"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return "claude"


CLAUDE = bundled_claude()

#: claude ``-p`` reads the prompt on stdin when it names none: an ``ask`` template
#: without ``{prompt}`` or ``{prompt_file}`` gets it there, out of every local
#: user's ``ps``. ``--setting-sources=`` keeps user and project settings out (a
#: ``CLAUDE.md`` left in a parent of the temp folder is no instruction).
#: ``--mcp-config`` is left out: the CLI rejects the empty ``{}`` file, and
#: ``--strict-mcp-config`` alone already loads no MCP server at all.
BUILTIN_AGENTS: dict[str, dict[str, list[str]]] = {
    "claude-code": {
        "ask": [
            CLAUDE,
            "-p",
            "--strict-mcp-config",
            "--setting-sources=",
            "--tools",
            CLAUDE_READ_TOOLS,
            "--allowedTools",
            CLAUDE_READ_TOOLS,
        ],
        "chat": [CLAUDE, "--strict-mcp-config", "--allowedTools", CLAUDE_READ_TOOLS],
    },
}
DEFAULT_AGENT = "claude-code"
DEFAULT_ASK_TIMEOUT_S = 600.0


def config_dir() -> Path:
    """The folder holding ``config.toml`` and ``prompt_template.md``."""
    configured = os.environ.get("BUTLER_CONFIG_HOME")
    return Path(configured) if configured else Path(platformdirs.user_config_dir("butler"))


def config_path() -> Path:
    """The user config file (it need not exist)."""
    return config_dir() / CONFIG_FILE


@dataclass(frozen=True)
class AgentCommand:
    """How to start one agent CLI headless (``ask``) and interactively (``chat``)."""

    name: str
    ask: tuple[str, ...]
    chat: tuple[str, ...]


@dataclass(frozen=True)
class AgentSettings:
    """The ``[agents]`` table: every agent known and which one answers."""

    config_file: Path
    default_agent: str = DEFAULT_AGENT
    agents: Mapping[str, AgentCommand] = field(default_factory=dict)
    ask_timeout_s: float = DEFAULT_ASK_TIMEOUT_S

    @property
    def folder(self) -> Path:
        """The config folder, where the prompt template lives too."""
        return self.config_file.parent

    def agent(self) -> AgentCommand:
        """The default agent's commands: ask and chat always use the default agent."""
        found = self.agents.get(self.default_agent)
        if found is None:
            known = ", ".join(sorted(self.agents)) or "none"
            raise ConfigError(
                f"{self.config_file}: default_agent {self.default_agent!r} names no agent; "
                f"known agents: {known}"
            )
        return found


@dataclass(frozen=True)
class Source:
    """One configured source: a name and the path its symlink points to."""

    name: str
    path: Path

    @property
    def kind(self) -> str:
        """``git``, ``folder``, ``file`` or ``missing``, for listings and the prompt."""
        if self.path.is_file():
            return "file"
        if (self.path / ".git").exists():
            return "git"
        if self.path.is_dir():
            return "folder"
        return "missing"


class Sources:
    """The ``[sources]`` table: name -> path, looked up by name."""

    def __init__(self, sources: Mapping[str, Path], config_file: Path) -> None:
        self._sources = {name: Source(name, path) for name, path in sources.items()}
        self.config_file = config_file

    def __iter__(self) -> Iterator[Source]:
        return iter(self._sources[name] for name in sorted(self._sources))

    def __len__(self) -> int:
        return len(self._sources)

    def get(self, name: str) -> Source:
        """The source called ``name``; an unknown name is a UserError listing the known."""
        source = self._sources.get(name)
        if source is None:
            known = ", ".join(sorted(self._sources))
            hint = f"known sources: {known}" if known else "no sources are configured"
            raise UserError(
                f"unknown source {name!r}; {hint} (add one with `butler sources add NAME PATH`, "
                f"or edit [sources] in {self.config_file})"
            )
        if source.kind == "missing":
            raise UserError(
                f"source {name!r} points to {source.path}, which does not exist "
                f"(fix [sources] in {self.config_file})"
            )
        return source


@dataclass(frozen=True)
class UserConfig:
    """Everything ``config.toml`` says, validated."""

    path: Path
    agents: AgentSettings
    sources: Sources
    #: ``[sandbox]``: the jail ask and chat run the agent in (see :mod:`butler.subagent.jail`).
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)


def load_user_config(path: Path | None = None) -> UserConfig:
    """Read and validate the user config; a missing file means built-in defaults."""
    path = path or config_path()
    data = read_toml(path) if path.exists() else {}
    unknown = sorted(set(data) - {"sources", "agents", "sandbox"})
    if unknown:
        raise ConfigError(
            f"{path}: unknown table {unknown[0]!r}; expected [sources], [agents] and [sandbox]"
        )
    sources = _parse_sources(_table(data, "sources", path), path)
    agents = _parse_agents(_table(data, "agents", path), path)
    sandbox = _parse_sandbox(_table(data, "sandbox", path), path)
    return UserConfig(path=path, agents=agents, sources=Sources(sources, path), sandbox=sandbox)


def _parse_sandbox(table: Mapping[str, Any], path: Path) -> SandboxConfig:
    try:
        return SandboxConfig(**table)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(part) for part in first["loc"])
        raise ConfigError(f"{path}: sandbox.{key}: {describe(first, SandboxConfig)}") from None


def _table(data: Mapping[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: {key!r} must be a table, found {type(value).__name__}")
    return value


def check_source_name(name: str, where: str) -> None:
    """Refuse names that are not one plain file name or collide with butler's files."""
    if not SOURCE_NAME.match(name) or name in RESERVED_NAMES:
        raise UserError(
            f"{where}: invalid source name {name!r}; expected letters, digits, '.', '_' or '-', "
            f"starting with a letter or digit, and not one of {', '.join(sorted(RESERVED_NAMES))}"
        )


def _parse_sources(table: Mapping[str, Any], path: Path) -> dict[str, Path]:
    sources: dict[str, Path] = {}
    for name, value in table.items():
        check_source_name(name, str(path))
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{path}: sources.{name} must be a path string, found {value!r}")
        # Relative paths in a hand-written file mean "next to the file".
        sources[name] = (path.parent / Path(value).expanduser()).absolute()
    return sources


def _parse_agents(table: Mapping[str, Any], path: Path) -> AgentSettings:
    commands = {
        name: AgentCommand(name, tuple(argv["ask"]), tuple(argv["chat"]))
        for name, argv in BUILTIN_AGENTS.items()
    }
    default_agent = table.get("default_agent", DEFAULT_AGENT)
    if not isinstance(default_agent, str):
        raise ConfigError(f"{path}: agents.default_agent must be a string")
    timeout = table.get("ask_timeout_seconds", DEFAULT_ASK_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise ConfigError(f"{path}: agents.ask_timeout_seconds must be a positive number")
    for name, value in table.items():
        if name in ("default_agent", "ask_timeout_seconds"):
            continue
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: agents.{name} must be a table with 'ask' and 'chat'")
        unknown_keys = sorted(set(value) - {"ask", "chat"})
        if unknown_keys:
            raise ConfigError(f"{path}: agents.{name}: unknown key {unknown_keys[0]!r}")
        base = commands.get(name)
        ask = _argv(value, "ask", name, path, ASK_PLACEHOLDERS, base.ask if base else None)
        chat = _argv(value, "chat", name, path, CHAT_PLACEHOLDERS, base.chat if base else None)
        commands[name] = AgentCommand(name, ask, chat)
    settings = AgentSettings(path, default_agent, commands, float(timeout))
    settings.agent()  # a default naming no agent is reported at load time
    return settings


def _argv(
    table: Mapping[str, Any],
    key: str,
    agent: str,
    path: Path,
    allowed: frozenset[str],
    fallback: tuple[str, ...] | None,
) -> tuple[str, ...]:
    """One command of one agent: a non-empty argv using only ``allowed`` placeholders."""
    where = f"{path}: agents.{agent}.{key}"
    if key not in table:
        if fallback is None:
            raise ConfigError(f"{where} is missing; expected an argv list of strings")
        return fallback
    value = table[key]
    if not isinstance(value, list) or not value or not all(isinstance(a, str) for a in value):
        raise ConfigError(
            f"{where} must be a non-empty list of strings (an argv, not a shell command), "
            f"found {value!r}"
        )
    for arg in value:
        for placeholder in PLACEHOLDER.findall(arg):
            if placeholder not in allowed:
                expected = ", ".join("{" + p + "}" for p in sorted(allowed))
                raise ConfigError(f"{where}: unknown placeholder {{{placeholder}}}; use {expected}")
    return tuple(value)


def add_source(name: str, target: Path, path: Path | None = None) -> Source:
    """Add ``name = target`` to ``[sources]``, keeping the rest of the file as written."""
    path = path or config_path()
    check_source_name(name, "sources add")
    target = target.expanduser().absolute()
    if not target.exists():
        raise UserError(f"sources add: {target} does not exist; expected a folder or a file")
    config = load_user_config(path)
    if name in {source.name for source in config.sources}:
        raise UserError(f"sources add: a source named {name!r} already exists in {path}")
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    # JSON strings are valid TOML basic strings; quoting the key keeps "a.b" one key.
    line = f"{json.dumps(name)} = {json.dumps(str(target))}\n"
    header = re.search(r"^\[sources\][ \t]*(#.*)?$\n?", text, flags=re.MULTILINE)
    if header:
        # Right after the header is inside the table whatever follows it.
        end = header.end()
        prefix = text[:end] if text[:end].endswith("\n") else text[:end] + "\n"
        text = prefix + line + text[end:]
    else:
        text = (text.rstrip("\n") + "\n\n" if text.strip() else "") + "[sources]\n" + line
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(path.name + ".tmp")
    scratch.write_text(text, encoding="utf-8")
    try:
        load_user_config(scratch)  # never leave a file behind that no longer parses
    except UserError:
        scratch.unlink(missing_ok=True)
        raise
    scratch.replace(path)
    return Source(name, target)


def remove_source(name: str, path: Path | None = None) -> Source:
    """Take ``name`` out of ``[sources]``, keeping the rest of the file as written.

    Only a plain ``name = "path"`` line of the ``[sources]`` table is removed; a
    source written any other way is left for the person to edit, and said so.
    """
    path = path or config_path()
    config = load_user_config(path)
    found = {source.name: source for source in config.sources}
    if name not in found:
        known = ", ".join(sorted(found)) or "none"
        raise UserError(f"sources remove: no source named {name!r} in {path}; there are: {known}")
    text = path.read_text(encoding="utf-8")
    header = re.search(r"^\[sources\][ \t]*(#.*)?$", text, flags=re.MULTILINE)
    start = header.end() if header else len(text)
    following = re.search(r"^[ \t]*\[", text[start:], flags=re.MULTILINE)
    end = start + following.start() if following else len(text)
    key = rf"(?:{re.escape(name)}|{re.escape(json.dumps(name))}|'{re.escape(name)}')"
    line = re.compile(rf"^[ \t]*{key}[ \t]*=.*(?:\n|$)", flags=re.MULTILINE)
    table = line.sub("", text[start:end], count=1)
    scratch = path.with_name(path.name + ".tmp")
    scratch.write_text(text[:start] + table + text[end:], encoding="utf-8")
    try:
        left = {source.name for source in load_user_config(scratch).sources}
    except UserError:
        scratch.unlink(missing_ok=True)
        raise
    if name in left:
        scratch.unlink(missing_ok=True)
        raise UserError(f"sources remove: {name!r} is not a plain line of [sources]; edit {path}")
    scratch.replace(path)
    return found[name]
