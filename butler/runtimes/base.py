"""The runtime adapter interface and the values that cross it.

An adapter turns one :class:`Invocation` into a run of one agent CLI and
returns a :class:`RuntimeResult`. Each adapter splits into a pure part (build
argv, environment and config files; parse one event line, tested on captured
real output) and the thin I/O shared by all of them in :mod:`.process`.
Adapters know nothing of the database, the server or the tools.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from butler.errors import RuntimeAdapterError
from butler.runtimes.mcp_config import McpEndpoint, butler_file
from butler.runtimes.settings import RuntimeConfig

#: Called with a short human-readable line while a session runs (progress).
ProgressSink = Callable[[str], Awaitable[None]]


class Said(str):
    """Progress that is the runtime's own text to the person, not a line about its work.

    Passed to a :data:`ProgressSink` as the assistant writes, so a chat can show the
    answer as it comes; a sink that shows status lines ("calling Bash") skips it.
    ``delta`` says that it continues the text before it; otherwise it starts a new
    message of the answer.
    """

    delta: bool

    def __new__(cls, text: str, delta: bool = False) -> Said:
        said = super().__new__(cls, text)
        said.delta = delta
        return said


@dataclass(frozen=True)
class ToolCall:
    """One MCP tool call made during a session, by its bare tool name."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    call_id: str | None = None
    error: str | None = None
    source: str = "runtime"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "arguments": self.arguments}
        if self.call_id:
            data["id"] = self.call_id
        if self.error:
            data["error"] = self.error
        data["source"] = self.source
        return data

    def key(self) -> str:
        """Identity used to merge what the runtime reported with what the server saw."""
        return self.name + "\0" + json.dumps(self.arguments, sort_keys=True, default=str)


@dataclass(frozen=True)
class Usage:
    """Token counts of a session, as the runtime reported them."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


class Sandbox(Protocol):
    """What a runtime process is started inside (the jail); adapters only wrap argv with it."""

    def wrap(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        interactive: bool = False,
        linger: bool = False,
    ) -> list[str]:
        """``argv`` as it runs inside the sandbox, ``env`` the environment it is started with.

        The sandbox may show a path at another place than outside (the session's
        home): ``argv`` and the values of ``env`` that name it are moved there.
        With ``linger`` the sandbox outlives the process (what it started in the
        background keeps running) and reports the process's end on stdout as a
        last line ``"\\0butler-jail-exit <wait status>"``.
        """
        ...

    def wrap_exact(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        passthrough: Iterable[str],
        pid_file: Path,
    ) -> list[str]:
        """``argv`` inside the sandbox with exactly ``env`` plus the ``passthrough`` names.

        For a runtime started by a library that merges the daemon's environment
        into its child's; the start records its pid (the leader of a new
        session, which ends the whole run) in ``pid_file``.
        """
        ...


@dataclass(frozen=True)
class Invocation:
    """Everything one run of a runtime needs, decided by the spawner."""

    prompt: str
    system_prompt: str
    cwd: Path
    workdir: Path
    home: Path
    env: dict[str, str]
    mcp: McpEndpoint | None
    max_turns: int
    timeout_s: float
    model: str | None = None
    args: tuple[str, ...] = ()
    resume: str | None = None
    #: Most output a text runtime keeps in memory and returns; the rest is cut with a marker.
    max_output_bytes: int = 1024 * 1024
    #: A folder shared by every run of the butler's runtimes, for caches worth keeping.
    cache_dir: Path | None = None
    #: Set by the session path when runtimes are jailed; every process start honours it.
    sandbox: Sandbox | None = None
    #: The butler's folder, where owner files live (a builder's ``cwd`` is its worktree).
    config_dir: Path | None = None


@dataclass(frozen=True)
class Command:
    """One run of a CLI: never a shell line, always an argv list."""

    argv: list[str]
    env: dict[str, str]
    stdin: str | None = None
    files: dict[Path, str] = field(default_factory=dict)
    #: A terminal session's first prompt, typed into it once it shows one of ``ready``:
    #: never on the command line, where every local user reads it (``ps``).
    typed_prompt: str = ""
    #: Text a terminal session shows once it accepts input.
    ready: tuple[str, ...] = ()


@dataclass
class RuntimeResult:
    """What a runtime produced. ``error`` is set when the runtime itself failed."""

    output: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None
    runtime_session_id: str | None = None
    error: str | None = None
    num_turns: int | None = None
    #: The model the runtime reported using, when it says.
    model: str | None = None


class RuntimeFailure(RuntimeAdapterError):
    """A runtime run failed; carries whatever it produced before failing.

    Defined beside :class:`RuntimeResult`, which it carries, but part of the
    one hierarchy of :mod:`butler.errors`.
    """

    def __init__(self, message: str, partial: RuntimeResult | None = None) -> None:
        super().__init__(message)
        self.partial = partial or RuntimeResult(error=message)


class RuntimeAdapter(ABC):
    """One agent CLI. Subclasses hold everything specific to it."""

    #: The ``[butler.runtime] type`` this adapter serves.
    type_name: ClassVar[str]
    #: The executable looked up on PATH when no ``cli_path`` is configured.
    binary_name: ClassVar[str]
    #: The system prompt file this runtime reads in a butler folder, best first.
    prompt_files: ClassVar[tuple[str, ...]] = ("CLAUDE.md",)
    #: Whether :meth:`invoke` can continue a runtime session by its id.
    supports_resume: ClassVar[bool] = False
    #: What this runtime reports as the whole conversation's running total on a
    #: resume (token counts, cost) rather than the session's own share.
    cumulative_on_resume: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, config: RuntimeConfig) -> None:
        self.config = config

    @classmethod
    def validate_config(cls, config: RuntimeConfig) -> None:
        """Raise ValueError when ``[butler.runtime]`` cannot work with this adapter.

        Most adapters accept any runtime table; those with required keys override this.
        """
        return None

    def parse_system_prompt_file(self, config_dir: Path) -> Path:
        """The file holding this runtime's system prompt in a butler folder."""
        for name in self.prompt_files:
            candidate = config_dir / name
            if candidate.is_file():
                return candidate
        return config_dir / self.prompt_files[-1]

    def mcp_config_files(self, invocation: Invocation) -> dict[Path, str]:
        """The MCP config files the workspace writes for this runtime, by path.

        butler's own ``mcp.json`` by default; runtimes configured otherwise (flags,
        their own settings file in the command) return none.
        """
        return butler_file(invocation.workdir, invocation.mcp)

    @abstractmethod
    async def invoke(
        self, invocation: Invocation, progress: ProgressSink | None = None
    ) -> RuntimeResult:
        """Run the runtime to completion; raise :class:`RuntimeFailure` on failure."""

    def interactive_command(self, invocation: Invocation) -> Command:
        """The argv and exact environment of this runtime as an interactive terminal session.

        Builders run it in tmux, locked down like :meth:`invoke`; ``invocation.prompt``
        is the initial prompt ("" for none), delivered as :attr:`Command.typed_prompt`.
        Runtimes without one refuse.
        """
        raise RuntimeFailure(f"runtime {self.type_name} has no interactive mode")

    def transcript(self, home: Path, workdir: Path) -> Transcript | None:
        """What an ended terminal session used, from the CLI's own files; None if unknown.

        ``home`` is the session's private home, ``workdir`` its private folder.
        """
        return None


@dataclass(frozen=True)
class Transcript:
    """Usage of a terminal session, read from the files its CLI wrote."""

    usage: Usage
    cost_usd: float | None = None
    model: str | None = None
    session_id: str | None = None
