"""Claude Code, through claude-agent-sdk ``query()``.

Pure parts: :func:`build_options` (the SDK options for one invocation) and
:func:`butler.runtimes.claude_stream.parse_event` (one stream-json object as
events, folded by the shared fold), both tested on captured real output.
The I/O part runs ``query()`` under a time limit and, because the SDK merges
the daemon's whole environment into the CLI's, starts the CLI through a
launcher that keeps only the built environment and puts the CLI in its own
process group.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from butler.runtimes.base import (
    Command,
    Invocation,
    ProgressSink,
    RuntimeAdapter,
    RuntimeFailure,
    RuntimeResult,
    Transcript,
)
from butler.runtimes.claude_lockdown import (
    BUILTIN_TOOLS,
    INTERACTIVE_ENV,
    READY,
    SYSTEM_PROMPT_FILE,
    interactive_argv,
    interactive_mcp_config,
    interactive_state,
)
from butler.runtimes.claude_stream import claude_fold, message_dict
from butler.runtimes.launch_main import PID_FILE
from butler.runtimes.launcher import write_launcher
from butler.runtimes.lazy import LazyModule, ready
from butler.runtimes.mcp_config import ConfigFileError, claude_entry, write_files
from butler.runtimes.process import KILL_GRACE_S, child_group, kill_group, terminate_group
from butler.runtimes.transcripts import claude as claude_transcript
from butler.security import untrusted

if TYPE_CHECKING:
    import claude_agent_sdk as sdk
else:
    sdk = LazyModule("claude_agent_sdk")  # loaded by the first session, not at start

#: Environment that keeps Claude Code from calling home: a daemon runs pinned
#: versions and sends nothing it was not asked to.
HARDENING_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    # MCP tools in the request itself: a butler has few tools, and deferring them
    # behind a search tool costs a model round trip on every session.
    "ENABLE_TOOL_SEARCH": "false",
    # Its own retries of a failing model API take minutes, past most session time
    # limits: the user would see "timeout" instead of the model's error.
    "CLAUDE_CODE_MAX_RETRIES": "2",
}
#: Variables the SDK sets for its own protocol; the launcher lets them through.
SDK_ENV = (
    "CLAUDE_CODE_ENTRYPOINT",
    "CLAUDE_AGENT_SDK_VERSION",
    "CLAUDE_CODE_SDK_READS_SESSION_STATE",
    "PWD",
)
STDERR_LINES = 200
MCP_FILE = "claude-mcp.json"
#: Claude Code's own state in the home (``CLAUDE_CONFIG_DIR`` is ``home/.claude``).
STATE_FILE = ".claude/.claude.json"
MAX_STATE_BYTES = 4 * 1024 * 1024


def bundled_cli() -> Path:
    """The claude binary shipped inside the claude-agent-sdk wheel.

    Found without importing the SDK: the daemon's start-up check asks for it,
    and the SDK loads with the first session instead.
    """
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or spec.origin is None:
        return Path(sdk.__file__).parent / "_bundled" / "claude"  # the SDK's own error
    return Path(spec.origin).parent / "_bundled" / "claude"


def parse_extra_args(args: tuple[str, ...] | list[str]) -> dict[str, str | None]:
    """``["--x", "v", "--flag", "--y=w"]`` as the SDK's ``extra_args`` mapping."""
    extra: dict[str, str | None] = {}
    items = list(args)
    i = 0
    while i < len(items):
        item = items[i]
        if not item.startswith("--"):
            raise ValueError(f"runtime args: expected a --flag, found {item!r}")
        name, eq, value = item[2:].partition("=")
        if eq:
            extra[name] = value
        elif i + 1 < len(items) and not items[i + 1].startswith("--"):
            extra[name] = items[i + 1]
            i += 1
        else:
            extra[name] = None
        i += 1
    return extra


def runtime_env(invocation: Invocation) -> dict[str, str]:
    """The CLI's whole environment: the spawner's, a private home, hardening."""
    home = invocation.home
    return {
        **invocation.env,
        **HARDENING_ENV,
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
    }


def session_files(invocation: Invocation) -> dict[Path, str]:
    """The files :func:`build_options` points the CLI at: system prompt, MCP config."""
    files = {invocation.workdir / SYSTEM_PROMPT_FILE: invocation.system_prompt}
    if invocation.mcp is not None:
        servers = {invocation.mcp.name: claude_entry(invocation.mcp)}
        files[invocation.workdir / MCP_FILE] = json.dumps({"mcpServers": servers})
    return files


def build_options(invocation: Invocation, cli_path: Path) -> sdk.ClaudeAgentOptions:
    """The SDK options for one invocation: one MCP server, no user settings.

    The system prompt and the MCP config (its session header included) go by
    file, written by :func:`session_files`, never on the command line.
    """
    allowed = list(BUILTIN_TOOLS)
    servers: dict[str, Any] | str = {}
    if invocation.mcp is not None:
        servers = str(invocation.workdir / MCP_FILE)
        allowed.append(f"mcp__{invocation.mcp.name}")
    return sdk.ClaudeAgentOptions(
        system_prompt={"type": "file", "path": str(invocation.workdir / SYSTEM_PROMPT_FILE)},
        mcp_servers=servers,
        strict_mcp_config=True,
        setting_sources=[],
        allowed_tools=allowed,
        cwd=str(invocation.cwd),
        max_turns=invocation.max_turns,
        model=invocation.model,
        resume=invocation.resume,
        cli_path=str(cli_path),
        env=runtime_env(invocation),
        extra_args=parse_extra_args(invocation.args),
    )


class ClaudeCodeAdapter(RuntimeAdapter):
    """Claude Code through the SDK, its CLI in a clean environment and process group."""

    type_name = "claude-code"
    binary_name = "claude"
    prompt_files = ("CLAUDE.md",)
    supports_resume = True
    cumulative_on_resume = frozenset({"cost_usd"})

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        # The CLI is pinned with the SDK; asking it its version costs a process per session.
        os.environ.setdefault("CLAUDE_AGENT_SDK_SKIP_VERSION_CHECK", "1")

    def cli_path(self) -> str:
        return self.config.cli_path or str(bundled_cli())

    def mcp_config_files(self, invocation: Invocation) -> dict[Path, str]:
        return {}  # the SDK is given the server; the TUI gets its file in its command

    async def invoke(
        self, invocation: Invocation, progress: ProgressSink | None = None
    ) -> RuntimeResult:
        await ready("claude_agent_sdk")
        cli = self.cli_path()
        if not os.access(cli, os.X_OK):
            raise RuntimeFailure(
                f"Claude Code not found at {cli}; expected the claude-agent-sdk bundled CLI "
                "or an executable [butler.runtime] cli_path"
            )
        invocation.home.mkdir(parents=True, exist_ok=True)
        try:
            write_files(session_files(invocation), (invocation.workdir,))
        except ConfigFileError as exc:
            raise RuntimeFailure(str(exc)) from None
        env = runtime_env(invocation)
        try:
            launcher = cli_launcher(invocation, cli, env)
            options = build_options(invocation, launcher)
        except ValueError as exc:
            raise RuntimeFailure(str(exc)) from None
        stderr: list[str] = []
        options.stderr = lambda line: stderr.append(line) if len(stderr) < STDERR_LINES else None
        stream = claude_fold(invocation.mcp.name if invocation.mcp else None)
        # At the time limit the CLI is signalled first: a cancelled SDK stream
        # would wait 5 s on a hung CLI before signalling it itself.
        group = CliGroup(invocation.workdir)
        timer = asyncio.get_running_loop().call_later(invocation.timeout_s, group.expire)
        try:
            async with asyncio.timeout(invocation.timeout_s + KILL_GRACE_S):
                async for message in sdk.query(prompt=invocation.prompt, options=options):
                    for line in stream.add(message_dict(message)):
                        if progress is not None:
                            await progress(line)
        except TimeoutError:
            group.expired = True
        except sdk.ClaudeSDKError as exc:
            if not group.expired:
                detail = stream.error() if stream.ended else None
                message = detail or _sdk_error_line(exc, stderr)
                raise RuntimeFailure(message, stream.result()) from None
        finally:
            timer.cancel()
            await group.kill()
        if group.expired:
            message = f"timeout after {invocation.timeout_s:g} s"
            raise RuntimeFailure(message, stream.result())
        result = stream.result()
        if result.error:
            raise RuntimeFailure(result.error, result)
        return result

    def interactive_command(self, invocation: Invocation) -> Command:
        """The claude TUI with the same lockdown, private home and hardening as a session."""
        cli = self.cli_path()
        if not os.access(cli, os.X_OK):
            raise RuntimeFailure(f"Claude Code not found at {cli}; expected an executable")
        env = {**runtime_env(invocation), **INTERACTIVE_ENV}
        state_file = invocation.home / STATE_FILE
        existing: dict[str, Any] = {}
        with contextlib.suppress(OSError, ValueError):
            # The runtime's own file (a resumed home): never through a link it planted.
            text = untrusted.read_text(invocation.home, STATE_FILE, MAX_STATE_BYTES)
            existing = json.loads(text or "{}")
        mcp_file = invocation.workdir / "claude-mcp.json"
        files = {
            state_file: json.dumps(interactive_state(invocation, existing), indent=2),
            mcp_file: json.dumps(interactive_mcp_config(invocation), indent=2),
            invocation.workdir / SYSTEM_PROMPT_FILE: invocation.system_prompt,
        }
        argv = interactive_argv(invocation, cli, mcp_file)
        return Command(argv, env, files=files, typed_prompt=invocation.prompt, ready=READY)

    def transcript(self, home: Path, workdir: Path) -> Transcript | None:
        """The session's project JSONL under the private ``CLAUDE_CONFIG_DIR``."""
        return claude_transcript(home)


@dataclass
class CliGroup:
    """The process group of one run's CLI, found through the pid its launcher recorded."""

    workdir: Path
    expired: bool = False

    async def kill(self) -> None:
        """End the CLI's process group, if the launcher recorded one."""
        pgid = self.group()
        if pgid is not None:
            await terminate_group(pgid, grace_s=1.0)

    def expire(self) -> None:
        """The time limit passed: signal the CLI's group so the SDK's stream ends now."""
        self.expired = True
        pgid = self.group()
        if pgid is not None:
            kill_group(pgid, signal.SIGTERM)

    def group(self) -> int | None:
        """The group the launcher recorded, if a child of this daemon leads it: the pid
        file lies in the workspace, which the runtime can write (a FIFO, a link to
        /dev/zero, another process's number)."""
        raw = untrusted.read_or_none(self.workdir, PID_FILE, 32)
        try:
            return child_group(int(raw or b""))
        except ValueError:
            return None


def cli_launcher(invocation: Invocation, cli: str, env: dict[str, str]) -> Path:
    """What the SDK starts: a launcher that gives the CLI exactly ``env`` (and the SDK's own).

    In a jail, the jail's launch script does that itself (one process start
    fewer per session); without one, the Python launcher does.
    """
    if invocation.sandbox is None:
        return write_launcher(invocation.workdir, [cli], passthrough=[*env, *SDK_ENV])
    pid_file = invocation.workdir / PID_FILE
    return Path(invocation.sandbox.wrap_exact([cli], env, SDK_ENV, pid_file)[0])


def _sdk_error_line(exc: Exception, stderr: list[str]) -> str:
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    tail = " | ".join(line for line in stderr[-3:] if line.strip())
    with contextlib.suppress(Exception):
        if tail and tail not in first:
            return f"{first}: {tail}"[:1000]
    return first[:1000]
