"""External runtimes: any executable implementing the adapter contract (see the README).

A roster registers them in ``agent_runtime.json`` beside its butlers:

    {"runtimes": {"file-agent": {"command": "adapters/file_agent.sh",
                                 "timeout_minutes": 10}}}

and a butler selects one with ``[butler.runtime] type = "file-agent"``. butler
then calls ``<command> spawn BRIEF STATE PROMPT_FILE`` (stdout: a session id),
polls ``<command> check_status ID`` until ``completed`` or ``failed``, and
``<command> resume ID STATE PROMPT_FILE`` to continue. Every call is argv, never
a shell line; the calls run in one process group that is killed on timeout.

``PROMPT_FILE`` is the path of a 0600 file holding the prompt (also in
``BUTLER_PROMPT_FILE``), never the text itself: every local user reads every
process's argv, and a prompt is the person's own words.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from butler.errors import ProcessTimeout
from butler.runtimes.base import (
    Invocation,
    ProgressSink,
    RuntimeAdapter,
    RuntimeFailure,
    RuntimeResult,
)
from butler.runtimes.jsonl import stderr_summary
from butler.runtimes.process import RuntimeProcess, kill_group
from butler.security.private_files import write_private

RUNTIMES_FILE = "agent_runtime.json"
#: The call's prompt, in its workspace: the contract's third argument names this file.
PROMPT_FILE = "prompt.md"
STATUSES = ("pending", "active", "completed", "failed")


@dataclass(frozen=True)
class ExternalSpec:
    """One entry of ``agent_runtime.json``."""

    name: str
    command: Path
    timeout_minutes: float | None = None
    poll_interval_s: float = 0.5


def load_runtimes_file(roster: Path) -> list[ExternalSpec]:
    """The external runtimes a roster registers; ValueError names what is wrong."""
    path = roster / RUNTIMES_FILE
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}") from None
    entries = data.get("runtimes") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        raise ValueError(f'{path}: expected an object {{"runtimes": {{NAME: {{...}}}}}}')
    specs = []
    for name, entry in entries.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
            raise ValueError(f"{path}: runtimes.{name}: expected an object with a 'command' path")
        command = (roster / entry["command"]).resolve()
        if not command.is_relative_to(roster.resolve()):
            raise ValueError(f"{path}: runtimes.{name}.command leaves the roster folder")
        specs.append(
            ExternalSpec(
                name=name,
                command=command,
                timeout_minutes=entry.get("timeout_minutes"),
                poll_interval_s=float(entry.get("poll_interval_s", 0.5)),
            )
        )
    return specs


class ExternalAdapter(RuntimeAdapter):
    """Drives an executable that implements spawn / resume / check_status."""

    spec: ClassVar[ExternalSpec]
    binary_name = "external"
    supports_resume = True

    async def _call(
        self,
        args: list[str],
        invocation: Invocation,
        timeout_s: float,
        started: list[RuntimeProcess],
        keep: bool = False,
    ) -> str:
        """Run one contract call; ``keep`` leaves what it started running (spawn, resume)."""
        lines: list[str] = []
        process = RuntimeProcess(invocation.on_process)
        started.append(process)
        env = {
            **invocation.env,
            "HOME": str(invocation.home),
            "BUTLER_MCP_CONFIG": str(invocation.workdir / "mcp.json"),
            "BUTLER_PROMPT_FILE": str(invocation.workdir / PROMPT_FILE),
        }
        try:
            outcome = await process.run(
                [str(self.spec.command), *args],
                env=env,
                cwd=invocation.cwd,
                timeout_s=timeout_s,
                on_line=lines.append,
                reap_group=not keep,
                sandbox=invocation.sandbox,
            )
        except (FileNotFoundError, PermissionError) as exc:
            raise RuntimeFailure(f"cannot run {self.spec.command}: {exc.strerror}") from None
        if outcome.returncode != 0:
            tail = stderr_summary(outcome.stderr) or "no message on stderr"
            raise RuntimeFailure(
                f"{self.spec.name} {args[0]} failed ({outcome.returncode}): {tail}"
            )
        return "\n".join(lines).strip()

    async def invoke(
        self, invocation: Invocation, progress: ProgressSink | None = None
    ) -> RuntimeResult:
        invocation.home.mkdir(parents=True, exist_ok=True)
        limit = invocation.timeout_s
        started: list[RuntimeProcess] = []  # every contract call of this run
        if self.spec.timeout_minutes:
            limit = min(limit, self.spec.timeout_minutes * 60)
        deadline = time.monotonic() + limit
        state = invocation.home / "state.json"
        brief = invocation.workdir / "brief.md"
        write_private(
            brief, f"# Task\n\n{invocation.prompt}\n\n# Instructions\n\n{invocation.system_prompt}"
        )
        prompt = str(write_private(invocation.workdir / PROMPT_FILE, invocation.prompt))
        try:
            if invocation.resume:
                session_id = invocation.resume
                await self._call(
                    ["resume", session_id, str(state), prompt],
                    invocation,
                    limit,
                    started,
                    keep=True,
                )
            else:
                session_id = await self._call(
                    ["spawn", str(brief), str(state), prompt],
                    invocation,
                    limit,
                    started,
                    keep=True,
                )
                session_id = session_id.splitlines()[-1].strip() if session_id else ""
                if not session_id:
                    raise RuntimeFailure(f"{self.spec.name} spawn printed no session id")
            status = await self._poll(session_id, invocation, deadline, progress, started)
        except ProcessTimeout:
            raise RuntimeFailure(f"timeout after {limit:g} s") from None
        finally:
            # Whatever spawn or resume left running ends with the session.
            for process in started:
                if process.pgid is not None:
                    kill_group(process.pgid)
        result = _result_from_state(state, session_id)
        if status == "failed":
            raise RuntimeFailure(f"{self.spec.name} reported the session failed", result)
        return result

    async def _poll(
        self,
        session_id: str,
        invocation: Invocation,
        deadline: float,
        progress: ProgressSink | None,
        started: list[RuntimeProcess],
    ) -> str:
        last = None
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeFailure(f"timeout after {invocation.timeout_s:g} s")
            status = await self._call(["check_status", session_id], invocation, left, started)
            if status not in STATUSES:
                raise RuntimeFailure(
                    f"{self.spec.name} check_status printed {status!r}; expected one of "
                    + ", ".join(STATUSES)
                )
            if status != last and progress is not None:
                await progress(status)
            last = status
            if status in ("completed", "failed"):
                return status
            await asyncio.sleep(self.spec.poll_interval_s)


def _result_from_state(state: Path, session_id: str) -> RuntimeResult:
    """The state file is the runtime's only report: its ``output`` or the whole state."""
    try:
        data = json.loads(state.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        data = {}
    output = data.get("output") if isinstance(data, dict) else None
    return RuntimeResult(
        output=str(output) if output is not None else json.dumps(data),
        runtime_session_id=session_id,
    )


def adapter_for(spec: ExternalSpec) -> type[ExternalAdapter]:
    """An adapter class bound to one registered external runtime."""
    return type(
        f"External_{spec.name}",
        (ExternalAdapter,),
        {"spec": spec, "type_name": spec.name, "binary_name": spec.command.name},
    )
