"""SubagentRunner: ask an agent CLI about configured sources, or chat with it.

Each call gets a private temp folder ``<system temp>/butler-ask-<owner>_<uuid>/``:

- empty MCP configs in every CLI's format (``.mcp.json``,
  ``.gemini/settings.json``, ``.cursor/mcp.json``, ``opencode.json``, and
  butler's own ``mcp.json``), so the agent cannot call back into any MCP
  server, least of all a butler that is itself running ``ask``;
- one symlink per requested source, named after the source;
- for ``ask`` only, ``prompt.md`` rendered from the user's prompt template.

The default agent's command runs there: an argv whose ``{placeholders}`` are
filled element by element exactly as the command runtime fills its own,
never through a shell, inside the runtime jail (:mod:`butler.subagent.jail`)
unless ``[sandbox] mode = "none"``. The folder is removed however the call
ends; removing it unlinks the symlinks, never the sources they point to.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from butler.config import SandboxConfig
from butler.errors import ProcessTimeout, RuntimeAdapterError, UserError
from butler.runtimes.command import render  # the command runtime's argv templating
from butler.runtimes.mcp_config import empty_files
from butler.runtimes.process import Completed, run_captured, run_interactive
from butler.sandbox import resolve_mode
from butler.spawner.workspace import Workspace, sweep_leftovers
from butler.subagent.jail import AgentRun, agent_run
from butler.subagent.sources import AgentCommand, AgentSettings, Source, Sources
from butler.subagent.template import load_template, render_prompt

WORKSPACE_PREFIX = "butler-ask-"
PROMPT_FILE = "prompt.md"
MCP_CONFIG = ".mcp.json"
#: How much of an agent's stderr an error message carries (the end matters most).
STDERR_TAIL = 4000
#: Claude Code refuses to start when it believes it runs inside itself; an
#: agent asking butler a question is exactly that case, and it is legitimate.
DROPPED_ENV = ("CLAUDECODE",)


class AgentFailed(RuntimeAdapterError):
    """The agent failed (non-zero exit, signal, time-out); the message carries its stderr."""

    def __init__(
        self,
        agent: str,
        returncode: int | None,
        stderr: str,
        *,
        reason: str | None = None,
        stdout: str = "",
    ) -> None:
        self.agent = agent
        self.returncode = returncode
        self.stderr = stderr
        if reason is None:
            code = returncode or 0
            reason = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
        # Some CLIs (Claude Code's "Not logged in") give their reason on stdout.
        detail = (
            stderr.strip()[-STDERR_TAIL:]
            or stdout.strip()[-STDERR_TAIL:]
            or "(nothing on stdout or stderr)"
        )
        super().__init__(f"agent {agent!r} {reason}: {detail}")


class AgentTimedOut(AgentFailed):
    """The agent gave no answer within the time limit; its process group was killed."""

    def __init__(self, agent: str, timeout_s: float, stderr: str) -> None:
        reason = f"gave no answer within {timeout_s:g} s and was stopped"
        super().__init__(agent, None, stderr, reason=reason)


def source_entry(source: Source) -> str:
    """How the prompt names a source: ``./name/`` for a folder, ``./name`` for a file."""
    return f"./{source.name}/" if source.path.is_dir() else f"./{source.name}"


def agent_env() -> dict[str, str]:
    """The user's own environment: an ask runs their CLI with their credentials."""
    return {k: v for k, v in os.environ.items() if k not in DROPPED_ENV}


class SubagentRunner:
    """Runs the default agent over symlinked sources in an isolated temp folder, jailed."""

    def __init__(
        self, config: AgentSettings, sources: Sources, sandbox: SandboxConfig | None = None
    ) -> None:
        self.config = config
        self.sources = sources
        self.sandbox = sandbox or SandboxConfig()

    async def ask(
        self, sources: Sequence[str], question: str, *, timeout_s: float | None = None
    ) -> str:
        """Ask ``question`` about ``sources`` headless; return the agent's stdout."""
        agent = self.config.agent()
        mode = self._mode()
        workspace = self._prepare(sources, question)
        try:
            prompt_file = workspace.path / PROMPT_FILE
            values = self._values(workspace)
            values["prompt_file"] = str(prompt_file)
            values["prompt"] = prompt_file.read_text(encoding="utf-8")
            argv = render(list(agent.ask), values)
            named = any(p in arg for arg in agent.ask for p in ("{prompt}", "{prompt_file}"))
            stdin = None if named else values["prompt"].encode()
            limit = timeout_s or self.config.ask_timeout_s
            async with self._run(agent, argv, workspace, sources, mode) as run:
                completed = await self._run_headless(
                    agent, run.wrap(argv), workspace.path, limit, stdin, run.env
                )
            if completed.returncode != 0:
                raise AgentFailed(
                    agent.name, completed.returncode, completed.stderr, stdout=completed.stdout
                )
            return completed.stdout
        finally:
            workspace.remove()

    async def chat(self, sources: Sequence[str]) -> int:
        """Open the agent interactively over ``sources``; return its exit status."""
        agent = self.config.agent()
        mode = self._mode()
        workspace = self._prepare(sources, None)
        try:
            argv = render(list(agent.chat), self._values(workspace))
            async with self._run(agent, argv, workspace, sources, mode) as run:
                try:
                    wrapped = run.wrap(argv, interactive=True)
                    return await run_interactive(wrapped, cwd=workspace.path, env=run.env)
                except OSError as exc:
                    raise self._cannot_start(agent, argv, exc) from None
        finally:
            workspace.remove()

    def _mode(self) -> str:
        """``bwrap`` or ``none``; ``mode = "bwrap"`` without bubblewrap is a ConfigError."""
        return resolve_mode(self.sandbox, f"{self.config.config_file}: [sandbox]")

    def _run(
        self,
        agent: AgentCommand,
        argv: list[str],
        workspace: Workspace,
        names: Sequence[str],
        mode: str,
    ) -> contextlib.AbstractAsyncContextManager[AgentRun]:
        """The agent's run in its jail; a program that does not exist fails before it."""
        if mode == "bwrap" and shutil.which(argv[0]) is None:
            raise self._cannot_start(agent, argv, FileNotFoundError(argv[0]))
        paths = [self.sources.get(name).path for name in dict.fromkeys(names)]
        return agent_run(
            self.sandbox,
            mode,
            agent=agent.name,
            argv=argv,
            workspace=workspace.path,
            sources=paths,
            env=agent_env(),
        )

    def _prepare(self, names: Sequence[str], question: str | None) -> Workspace:
        """Make the temp folder: MCP configs, symlinks, and prompt.md when asking."""
        # Everything that can be the user's mistake is checked before any file exists.
        resolved = [self.sources.get(name) for name in dict.fromkeys(names)]
        template = load_template(self.config.folder) if question is not None else None
        sweep_leftovers(WORKSPACE_PREFIX)
        workspace = Workspace(WORKSPACE_PREFIX).create()
        try:
            workspace.write(empty_files(workspace.path))
            for source in resolved:
                link = workspace.path / source.name
                link.symlink_to(source.path, target_is_directory=source.path.is_dir())
            if template is not None and question is not None:
                entries = [source_entry(source) for source in resolved]
                prompt = render_prompt(template, question, entries)
                (workspace.path / PROMPT_FILE).write_text(prompt, encoding="utf-8")
        except BaseException:
            workspace.remove()
            raise
        return workspace

    @staticmethod
    def _values(workspace: Workspace) -> dict[str, str]:
        return {"mcp_config": str(workspace.path / MCP_CONFIG), "workdir": str(workspace.path)}

    async def _run_headless(
        self,
        agent: AgentCommand,
        argv: list[str],
        cwd: Path,
        timeout_s: float,
        stdin: bytes | None,
        env: dict[str, str],
    ) -> Completed:
        try:
            return await run_captured(argv, cwd=cwd, env=env, timeout_s=timeout_s, stdin=stdin)
        except ProcessTimeout as exc:
            raise AgentTimedOut(agent.name, exc.timeout_s, exc.stderr) from None
        except OSError as exc:
            raise self._cannot_start(agent, argv, exc) from None

    def _cannot_start(self, agent: AgentCommand, argv: list[str], exc: OSError) -> UserError:
        reason = "not found" if isinstance(exc, FileNotFoundError) else exc.strerror or str(exc)
        return UserError(
            f"agent {agent.name!r}: cannot run {argv[0]!r} ({reason}); install it or change "
            f"[agents.{agent.name}] in {self.config.config_file}"
        )
