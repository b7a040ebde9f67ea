"""Codex, Gemini, OpenCode and Copilot as terminal sessions (builders), and what they used.

Each adapter here is its headless adapter plus :meth:`interactive_command`:
the CLI's TUI with the same lockdown as a headless run (only the butler's MCP
server, the private home, the environment allow-list; the jail wraps it
outside), its first-run and trust questions answered by config files in the
private home rather than by keystrokes, and the task typed in once the TUI
shows it is ready (:attr:`Command.typed_prompt`), never on its command line.
:meth:`transcript` reads what the session used from the CLI's own files.
The registry names these classes for the four runtime types.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import tomllib
from pathlib import Path
from typing import Any

from butler.runtimes import codex, copilot, gemini, opencode, transcripts
from butler.runtimes.base import Command, Invocation, RuntimeFailure, Transcript
from butler.security import untrusted

#: Codex's own approvals and sandbox are off: the butler's jail is the sandbox,
#: and a builder commits into the repository's git folder outside its worktree.
CODEX_TUI_ARGS = ["-a", "never", "-s", "danger-full-access"]
#: Where Codex finds project config: ``.codex/config.toml`` in the folder and its parents.
CODEX_PROJECT_CONFIG = Path(".codex") / "config.toml"
SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
#: Most of a project config read: it is repository content any earlier builder could commit.
MAX_CONFIG_BYTES = 1024 * 1024
#: Copilot's own state in its home, which the daemon extends with the worktree's trust.
COPILOT_STATE = ".copilot/config.json"


def project_folders(cwd: Path) -> list[Path]:
    """``cwd`` and its parents up to its project root (the first holding ``.git``), where
    Codex looks for project config; all of them when there is no root."""
    folders: list[Path] = []
    for folder in [cwd, *cwd.parents]:
        folders.append(folder)
        if (folder / ".git").exists():
            break
    return folders


def codex_project_servers(cwd: Path) -> list[str]:
    """MCP server names in the project configs Codex loads for ``cwd`` (a trusted folder).

    The TUI has no ``--ignore-user-config``; each such server is switched off by name
    (only servers Codex loads: an override for one it does not is an invalid server).
    """
    names: list[str] = []
    for folder in project_folders(cwd):
        raw = _project_config(folder)
        with contextlib.suppress(UnicodeDecodeError, tomllib.TOMLDecodeError):
            data = tomllib.loads(raw.decode("utf-8"))
            servers = data.get("mcp_servers")
            if isinstance(servers, dict):
                # Codex refuses other server names, so none can dodge the override's key path.
                names += [str(name) for name in servers if SERVER_NAME.match(str(name))]
    return names


def _project_config(folder: Path) -> bytes:
    """A project config's bytes, read bounded and never through a link: a FIFO or a link
    to ``/dev/zero`` committed there would hang or flood the daemon.

    Refuses (rather than skips) what exists but cannot be read whole: Codex follows a
    link and reads past any cap, so a server named only there would stay switched on.
    """
    try:
        return untrusted.read(folder, CODEX_PROJECT_CONFIG, MAX_CONFIG_BYTES)
    except FileNotFoundError:
        return b""
    except OSError as e:
        raise RuntimeFailure(
            f"codex project config {folder / CODEX_PROJECT_CONFIG}: must be a regular file of "
            f"at most {MAX_CONFIG_BYTES} bytes (not a link, FIFO or device) ({e}); its MCP "
            "servers could not be switched off"
        ) from None


def codex_config(invocation: Invocation) -> str:
    """``$CODEX_HOME/config.toml`` of a terminal session: the butler's instructions, and
    trust in the worktree (so no dialog asks)."""
    lines = [f"developer_instructions = {codex.toml_string(invocation.system_prompt)}"]
    lines += [f"[projects.{codex.toml_string(str(invocation.cwd))}]", 'trust_level = "trusted"']
    return "\n".join(lines) + "\n"


def codex_disabled(invocation: Invocation) -> list[str]:
    """``-c`` overrides switching off every project server but the butler's.

    An override, not the home's config file: Codex checks each config layer's
    server table alone, and an entry of only ``enabled`` is not a valid server.
    """
    butler = invocation.mcp.name if invocation.mcp else None
    args: list[str] = []
    for name in sorted(set(codex_project_servers(invocation.cwd)) - {butler}):
        args += ["-c", f"mcp_servers.{name}.enabled=false"]
    return args


class CodexTerminalAdapter(codex.CodexAdapter):
    """Codex: ``codex exec`` headless, its TUI for builders."""

    def interactive_command(self, invocation: Invocation) -> Command:
        binary = self.binary(invocation.env)
        headless = self.command(invocation, binary)
        codex_home = Path(headless.env["CODEX_HOME"])
        argv = [binary, "-C", str(invocation.cwd)]
        if invocation.model:
            argv += ["-m", invocation.model]
        argv += codex.mcp_overrides(invocation) + codex_disabled(invocation)
        argv += codex.HARDENING_ARGS + CODEX_TUI_ARGS
        return Command(
            argv=argv + list(invocation.args),
            env=headless.env,
            files={codex_home / "config.toml": codex_config(invocation)},
            typed_prompt=invocation.prompt,
            ready=("Ask Codex to do anything", "? for shortcuts"),
        )

    def transcript(self, home: Path, workdir: Path) -> Transcript | None:
        return transcripts.codex(home)


class GeminiTerminalAdapter(gemini.GeminiAdapter):
    """Gemini CLI: ``--prompt`` headless, its TUI for builders."""

    def interactive_command(self, invocation: Invocation) -> Command:
        binary = self.binary(invocation.env)
        headless = self.command(invocation, binary)
        argv = [binary, "--approval-mode", "yolo", "--skip-trust"]
        argv += ["--allowed-mcp-server-names", invocation.mcp.name if invocation.mcp else "none"]
        if invocation.model:
            argv += ["--model", invocation.model]
        env = {k: v for k, v in headless.env.items() if k != "NO_COLOR"}
        return Command(
            argv=argv + list(invocation.args),
            env=env,
            files=headless.files,
            typed_prompt=invocation.prompt,
            ready=("Type your message",),
        )

    def transcript(self, home: Path, workdir: Path) -> Transcript | None:
        return transcripts.gemini(home)


class OpenCodeTerminalAdapter(opencode.OpenCodeAdapter):
    """OpenCode: ``opencode run`` headless, its TUI for builders."""

    def interactive_command(self, invocation: Invocation) -> Command:
        binary = self.binary(invocation.env)
        # The owner's provider config is in the butler folder, not the builder's worktree.
        owner = dataclasses.replace(invocation, cwd=invocation.config_dir or invocation.cwd)
        headless = self.command(owner, binary)
        argv = [binary, str(invocation.cwd), "--agent", opencode.AGENT]
        if invocation.model:
            argv += ["--model", invocation.model]
        return Command(
            argv=argv + list(invocation.args),
            env=headless.env,
            files=headless.files,
            typed_prompt=invocation.prompt,
            ready=("ctrl+p commands",),
        )

    def transcript(self, home: Path, workdir: Path) -> Transcript | None:
        return transcripts.opencode(home)


def copilot_state(home: Path, path: str, cwd: Path) -> str:
    """``$COPILOT_HOME/config.json`` trusting the worktree, so no trust dialog shows."""
    state: dict[str, Any] = {}
    with contextlib.suppress(OSError, ValueError):
        # The runtime's own file (a resumed home): never through a link it planted.
        text = untrusted.read(home, path, MAX_CONFIG_BYTES).decode("utf-8")
        # Copilot writes a comment line above the object.
        loaded = json.loads(text[text.index("{") :])
        state = loaded if isinstance(loaded, dict) else {}
    folders = [f for f in state.get("trustedFolders") or [] if isinstance(f, str)]
    state["trustedFolders"] = [*folders, str(cwd)] if str(cwd) not in folders else folders
    return json.dumps(state, indent=2) + "\n"


class CopilotTerminalAdapter(copilot.CopilotAdapter):
    """GitHub Copilot CLI: ``--output-format json`` headless, its TUI for builders."""

    def interactive_command(self, invocation: Invocation) -> Command:
        binary = self.binary(invocation.env)
        headless = self.command(invocation, binary)
        mcp_file = invocation.workdir / "copilot-mcp.json"
        argv = [binary, *copilot.permission_args(invocation)]
        argv += ["--additional-mcp-config", f"@{mcp_file}"]
        argv += ["--usage-output-file", str(invocation.workdir / copilot.USAGE_FILE)]
        argv += [a for a in copilot.HARDENING_ARGS if a != "--no-color"]
        if invocation.model:
            argv += ["--model", invocation.model]
        state = invocation.home / COPILOT_STATE
        files = {
            **headless.files,
            # The session token is in the headers: a file, never the command line.
            mcp_file: json.dumps(copilot.mcp_config(invocation)),
            state: copilot_state(invocation.home, COPILOT_STATE, invocation.cwd),
        }
        env = {k: v for k, v in headless.env.items() if k != "NO_COLOR"}
        prompt = invocation.prompt
        if prompt:  # no system-prompt channel that loads nothing else (see copilot.py)
            prompt = codex.embed_system_prompt(invocation.system_prompt, prompt)
        return Command(
            argv=argv + list(invocation.args),
            env=env,
            files=files,
            typed_prompt=prompt,
            ready=("/ commands",),
        )

    def transcript(self, home: Path, workdir: Path) -> Transcript | None:
        return transcripts.copilot(workdir, copilot.USAGE_FILE)
