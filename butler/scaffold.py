"""``butler init NAME``: a new butler folder that starts as written.

The folder holds a ``butler.toml`` whose comments name every setting a first
butler needs (and where the others are documented), a ``CLAUDE.md`` to make
its own, and an empty ``skills/``. Its port is the next after the roster's
highest, so it runs beside the others under ``butler up``. Nothing is
overwritten: an existing folder is refused.
"""

from __future__ import annotations

from pathlib import Path

from butler.config import load_config
from butler.config.section import NAME_PATTERN
from butler.errors import ConfigError, UserError
from butler.tomlfile import read_toml

#: The first butler's port; later ones take the next after the roster's highest.
FIRST_PORT = 8101
#: The runtimes a new folder may name: the agent CLIs (``command`` needs its own argv).
RUNTIMES = ("claude-code", "codex", "gemini", "opencode", "copilot")

BUTLER_TOML = """\
# {name}: one butler (docs: README.md "A butler is a folder", docs/runtimes.md).
# Start it:  butler run --config {folder}
# Ask it:    butler trigger --config {folder} "Hello"

[butler]
# Lower-case; also its database schema.
name = "{name}"
# Its MCP server (/mcp), /health and dashboard: http://127.0.0.1:{port}/
port = {port}
description = "{description}"
# host = "127.0.0.1"       # 0.0.0.0 to serve other machines (behind TLS)

[butler.runtime]
type = "{runtime}"  # claude-code, codex, gemini, opencode, copilot or command
# model = "claude-sonnet-4-5"
max_concurrent_sessions = 1  # sessions at once; more wait in a queue
max_turns = 20
timeout_s = 600            # a session running longer is stopped

[butler.env]               # variables runtimes get from your environment, by name
# The model API key (ANTHROPIC_API_KEY...) always reaches the runtime: set it in the
# daemon's environment or store it with `butler credentials set ANTHROPIC_API_KEY -c {folder}`.
optional = ["ANTHROPIC_BASE_URL"]

[butler.memory]            # recent sessions appended to the system prompt
enabled = true

# [butler.sandbox]         # every session runs jailed; reach more hosts or folders:
# allow_hosts = ["api.example.com"]
# read_only = ["/opt/tools"]

# [[butler.schedule]]      # a session on a schedule (docs/schedules.md)
# name = "morning"
# cron = "0 8 * * *"
# timezone = "UTC"
# prompt = "What is due today?"
"""

CLAUDE_MD = """\
# {title} butler

You are {name}, a personal butler. {description}

## What you keep in state

Use the butler's `state_get` / `state_set` tools to remember what matters
between sessions, under keys such as `notes/<topic>`.

## How you work

- Answer from what you have recorded; say so when you do not know.
- Keep answers short and plain.
"""

SKILLS_README = """\
Scripts and notes a session of this butler may use: a session's working folder is
the butler's folder, so it runs them as `skills/<name>/...`.
"""


def next_port(roster: Path) -> int:
    """The port after the highest of the roster's butlers (the first one's when none)."""
    ports = []
    for toml in roster.glob("*/butler.toml"):
        try:
            port = read_toml(toml).get("butler", {}).get("port")
        except ConfigError:
            continue  # a broken sibling is its own problem; `butler list` names it
        if isinstance(port, int):
            ports.append(port)
    return max(ports) + 1 if ports else FIRST_PORT


def init_butler(
    roster: Path,
    name: str,
    *,
    port: int | None = None,
    runtime: str = "claude-code",
    description: str | None = None,
) -> Path:
    """Write ``roster/NAME/`` and check it loads; return the folder."""
    if not NAME_PATTERN.match(name):
        raise UserError(
            f"{name!r}: expected a butler name of lower-case letters, digits, - and _, "
            "starting with a letter (at most 40), e.g. health"
        )
    if runtime not in RUNTIMES:
        raise UserError(f"--runtime: expected one of {', '.join(RUNTIMES)}, found {runtime!r}")
    folder = roster / name
    if folder.exists():
        raise UserError(f"{folder}: already exists; expected a new folder (nothing was changed)")
    description = description or f"The {name} butler."
    values = {
        "name": name,
        "title": name.capitalize(),
        "folder": str(folder),
        "port": next_port(roster) if port is None else port,
        "runtime": runtime,
        "description": description.replace('"', "'"),
    }
    folder.mkdir(parents=True)
    try:
        (folder / "skills").mkdir()
        (folder / "skills" / "README.md").write_text(SKILLS_README, encoding="utf-8")
        # Every built-in runtime reads CLAUDE.md (Codex and others also AGENTS.md).
        (folder / "CLAUDE.md").write_text(CLAUDE_MD.format(**values), encoding="utf-8")
        (folder / "butler.toml").write_text(BUTLER_TOML.format(**values), encoding="utf-8")
        load_config(folder)
    except BaseException:
        _remove(folder)  # a half-made folder would be refused by the next try
        raise
    return folder


def _remove(folder: Path) -> None:
    for path in sorted(folder.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() and not path.is_symlink() else path.unlink()
    folder.rmdir()
