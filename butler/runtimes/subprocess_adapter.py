"""The shared shape of every adapter that runs its CLI as a plain subprocess.

A subclass supplies the pure parts: :meth:`command` (argv, environment, stdin
and config files for one invocation) and :meth:`parser` (a
:class:`StreamParser` folding stdout lines into a result). This class does
the I/O: resolve the binary, write files, run the process in its own
process group under the time limit, report progress, map failures.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from abc import abstractmethod
from typing import Protocol

from butler.errors import ProcessTimeout
from butler.runtimes.base import (
    Command,
    Invocation,
    ProgressSink,
    RuntimeAdapter,
    RuntimeFailure,
    RuntimeResult,
)
from butler.runtimes.jsonl import exit_message
from butler.runtimes.mcp_config import ConfigFileError, write_files
from butler.runtimes.process import ProcessOutcome, RuntimeProcess


class Relay:
    """Passes progress messages on to a sink, in order, from one task of its own.

    The line callback cannot await, and a task for each message cost more than
    parsing its line (the ``command`` runtime says every line it prints).
    """

    def __init__(self, progress: ProgressSink | None) -> None:
        self.progress = progress
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()
        self.task = asyncio.get_running_loop().create_task(self._run()) if progress else None

    def put(self, messages: list[str]) -> None:
        if self.task is not None:
            for message in messages:
                self.queue.put_nowait(message)

    async def _run(self) -> None:
        assert self.progress is not None
        while (message := await self.queue.get()) is not None:
            with contextlib.suppress(Exception):  # a caller that went away stops no run
                await self.progress(message)

    async def close(self) -> None:
        """Return once every message put so far was passed on."""
        if self.task is not None:
            self.queue.put_nowait(None)
            await self.task


class StreamParser(Protocol):
    """Folds a runtime's stdout, one line at a time, into a result."""

    def feed(self, line: str) -> list[str]:
        """Take one line; return the progress messages worth reporting, in order (the
        runtime's own text as :class:`~butler.runtimes.base.Said`)."""

    def result(self) -> RuntimeResult:
        """What was parsed so far; ``error`` set when the runtime reported a failure."""


class SubprocessAdapter(RuntimeAdapter):
    """A runtime whose CLI is started directly and speaks JSON lines (or text) on stdout."""

    #: Packages to install when the binary is missing, for the error message.
    install_hint: str = ""

    def binary(self, env: dict[str, str]) -> str:
        """``cli_path`` if configured, else ``binary_name`` on the runtime's PATH."""
        if self.config.cli_path:
            path = self.config.cli_path
            if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                raise RuntimeFailure(
                    f"{self.binary_name} not found at {path}; expected an executable"
                )
            return path
        found = shutil.which(self.binary_name, path=env.get("PATH"))
        if found is None:
            # Installed but not found (a PATH the daemon's service does not share): the
            # fix is its path, which the jail binds wherever it is; else installing it.
            hint = f", or install it: {self.install_hint}" if self.install_hint else ""
            raise RuntimeFailure(
                f"{self.binary_name} not found on PATH ({env.get('PATH', '')}); set "
                f"[butler.runtime] cli_path to its full path (`command -v {self.binary_name}` "
                f"where it runs){hint}"
            )
        return found

    @abstractmethod
    def command(self, invocation: Invocation, binary: str) -> Command:
        """The argv, environment, stdin and files for one invocation."""

    @abstractmethod
    def parser(self, invocation: Invocation, process: RuntimeProcess) -> StreamParser:
        """A fresh parser for one run; ``process`` is that run's, for a parser that must
        end it early."""

    def read_stderr(self, invocation: Invocation, result: RuntimeResult, stderr: str) -> None:
        """Add to ``result`` what the CLI said only on stderr (most say nothing worth it)."""

    def exit_error(self, outcome: ProcessOutcome) -> str:
        """A readable error for a non-zero exit that the stream did not explain."""
        return exit_message(self.binary_name, outcome.returncode, outcome.stderr)

    async def invoke(
        self, invocation: Invocation, progress: ProgressSink | None = None
    ) -> RuntimeResult:
        invocation.home.mkdir(parents=True, exist_ok=True)
        binary = self.binary(invocation.env)
        command = self.command(invocation, binary)
        try:
            # A resumed home is the runtime's own: a link it left (``.codex`` -> /etc)
            # is refused or replaced, never written through.
            write_files(command.files, (invocation.home, invocation.workdir))
        except ConfigFileError as exc:
            raise RuntimeFailure(str(exc)) from None
        process = RuntimeProcess(invocation.on_process)
        parser = self.parser(invocation, process)
        relay = Relay(progress)

        def on_line(line: str) -> None:
            relay.put(parser.feed(line))

        try:
            outcome = await process.run(
                command.argv,
                env=command.env,
                cwd=invocation.cwd,
                timeout_s=invocation.timeout_s,
                on_line=on_line,
                stdin_data=command.stdin.encode() if command.stdin is not None else None,
                sandbox=invocation.sandbox,
            )
        except ProcessTimeout as exc:
            raise RuntimeFailure(str(exc), parser.result()) from None
        except (FileNotFoundError, PermissionError) as exc:
            raise RuntimeFailure(f"cannot start {command.argv[0]}: {exc.strerror}") from None
        finally:
            await relay.close()
        result = parser.result()
        self.read_stderr(invocation, result, outcome.stderr)
        if result.error:
            raise RuntimeFailure(result.error, result)
        if outcome.returncode != 0:
            result.error = self.exit_error(outcome)
            raise RuntimeFailure(result.error, result)
        return result
