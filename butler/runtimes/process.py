"""butler's one subprocess runner: start, stream lines, time out, reap.

A runtime runs as the leader of its own session (``start_new_session``), so
the whole tree it starts (MCP helpers, shells, language servers) is one
process group. On timeout or cancellation the group gets SIGTERM, then
SIGKILL after a grace period, and is reaped: nothing is left behind.

``ask`` uses the same runner: :func:`run_captured` headless (its own group,
killed as a whole), :func:`run_interactive` on the terminal, which must
instead stay in butler's own process group: that is the terminal's
foreground group, the one that may read the keyboard and receives Ctrl-C and
window resizes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from butler.runtimes.base import Sandbox

from butler.errors import ProcessTimeout

#: Seconds a process group gets between SIGTERM and SIGKILL.
KILL_GRACE_S = 3.0
#: Keep at most this much of stderr for error messages.
STDERR_LIMIT = 64 * 1024
#: Longest stdout line handed on whole; a longer one is cut, marked, and the rest skipped.
LINE_LIMIT = 16 * 1024 * 1024


@dataclass(frozen=True)
class ProcessOutcome:
    """How a runtime process ended."""

    returncode: int
    stderr: str


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> bool:
    """Signal a whole process group; False when it is already gone."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def child_group(pgid: int | None) -> int | None:
    """``pgid`` when it is a process group led by a child of this process, else None.

    For a pid read from a file a runtime can write (Claude Code's launcher records
    its pid in the session's workspace, which the jail leaves writable): a planted
    ``0`` would signal the daemon's own group, any other number someone else's.
    """
    if pgid is None or pgid <= 1:
        return None
    try:
        # /proc/<pid>/stat: "pid (comm) state ppid pgrp ..."; comm may hold spaces.
        fields = Path(f"/proc/{pgid}/stat").read_text().rsplit(")", 1)[1].split()
        ppid, group = int(fields[1]), int(fields[2])
    except (OSError, IndexError, ValueError):
        return None
    return pgid if ppid == os.getpid() and group == pgid else None


def group_alive(pgid: int) -> bool:
    """Whether any process of the group is still running (zombies do not count)."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # /proc/<pid>/stat: "pid (comm) state ppid pgrp ..."; comm may hold spaces.
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


async def terminate_group(pgid: int, grace_s: float = KILL_GRACE_S) -> None:
    """SIGTERM the group, wait up to ``grace_s`` for it to go, then SIGKILL it."""
    if not kill_group(pgid, signal.SIGTERM):
        return
    deadline = asyncio.get_running_loop().time() + grace_s
    while group_alive(pgid) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
    kill_group(pgid, signal.SIGKILL)


async def _read_line(stream: asyncio.StreamReader) -> bytes:
    """The next line (empty at end of stream); one over :data:`LINE_LIMIT` is cut and marked."""
    try:
        return await stream.readuntil(b"\n")
    except asyncio.IncompleteReadError as exc:
        return exc.partial  # the last line had no newline
    except asyncio.LimitOverrunError as exc:
        head = await stream.readexactly(exc.consumed)
    skipped = 0
    while True:  # drop the rest of the line without holding it
        try:
            skipped += len(await stream.readuntil(b"\n"))
            break
        except asyncio.IncompleteReadError as exc:
            skipped += len(exc.partial)
            break
        except asyncio.LimitOverrunError as exc:
            skipped += len(await stream.readexactly(exc.consumed))
    marker = f" [butler: line cut, {skipped} more bytes past the {LINE_LIMIT}-byte line limit]"
    return head + marker.encode()


async def _pump_lines(
    stream: asyncio.StreamReader,
    on_line: Callable[[str], None],
    done: Callable[[], bool] = lambda: False,
) -> None:
    while not done():
        line = await _read_line(stream)
        if not line:
            return
        on_line(line.decode("utf-8", errors="replace").rstrip("\r\n"))


async def _collect(stream: asyncio.StreamReader) -> str:
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = await stream.read(65536)
        if not chunk:
            break
        if size < STDERR_LIMIT:
            chunks.append(chunk)
            size += len(chunk)
    return b"".join(chunks).decode("utf-8", errors="replace")[:STDERR_LIMIT]


def _nobody(pgid: int) -> None:
    """No one records the process group (a run outside any session: ``ask``, a benchmark)."""


class RuntimeProcess:
    """One runtime subprocess in its own process group; ``on_start`` is told the group's
    id as it starts, so that the session owning it can record it (a daemon or worker
    killed outright leaves the group behind)."""

    def __init__(self, on_start: Callable[[int], None] | None = None) -> None:
        self.pgid: int | None = None
        self._on_start = on_start or _nobody

    async def run(
        self,
        argv: Sequence[str],
        *,
        env: dict[str, str],
        cwd: Path,
        timeout_s: float,
        on_line: Callable[[str], None],
        stdin_data: bytes | None = None,
        reap_group: bool = True,
        sandbox: Sandbox | None = None,
    ) -> ProcessOutcome:
        """Run ``argv`` (never through a shell), feeding each stdout line to ``on_line``.

        With ``reap_group`` (the default) whatever the process left running in its
        group is killed when it exits; without, the caller ends the group later.
        With ``sandbox`` the process starts inside it.
        """
        exit_status: list[int] = []
        if sandbox is not None:
            argv = sandbox.wrap(argv, env=env, linger=not reap_group)
            on_line = on_line if reap_group else _exit_marker(on_line, exit_status)
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE if stdin_data is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=str(cwd),
            env=env,
            start_new_session=True,
            limit=LINE_LIMIT,
        )
        self.pgid = proc.pid
        self._on_start(proc.pid)
        assert proc.stdout is not None and proc.stderr is not None
        stderr_task = asyncio.create_task(_collect(proc.stderr))
        try:
            if stdin_data is not None and proc.stdin is not None:
                proc.stdin.write(stdin_data)
                with contextlib.suppress(ConnectionError):
                    await proc.stdin.drain()
                proc.stdin.close()
            async with asyncio.timeout(timeout_s):
                await _pump_lines(proc.stdout, on_line, lambda: bool(exit_status))
                # A lingering sandbox reports how the process ended and stays up.
                returncode = exit_status[0] if exit_status else await proc.wait()
        except TimeoutError:
            await self.stop()
            await proc.wait()
            raise ProcessTimeout(timeout_s, await _finish(stderr_task)) from None
        except BaseException:
            await self.stop()
            with contextlib.suppress(ProcessLookupError):
                await asyncio.shield(proc.wait())
            stderr_task.cancel()
            raise
        if reap_group:
            # The leader exited; anything it started that is still around goes too.
            kill_group(proc.pid)
        return ProcessOutcome(returncode=returncode, stderr=await _finish(stderr_task))

    async def stop(self) -> None:
        """End the whole process group, if it is still running."""
        if self.pgid is not None:
            await terminate_group(self.pgid)


#: The last line a lingering sandbox prints: how the process in it ended.
EXIT_MARKER = "\x00butler-jail-exit "


def _exit_marker(on_line: Callable[[str], None], found: list[int]) -> Callable[[str], None]:
    """``on_line`` minus the sandbox's exit line, whose status goes into ``found``.

    Only a lingering jail's bridge prints that line; elsewhere it is output. The
    runtime writes to the same stdout: a line of that shape that is not a wait status
    is its output. (A well-formed one it forges ends the read as ``exit(n)`` would:
    no more than the runtime can do anyway.)"""

    def feed(line: str) -> None:
        if line.startswith(EXIT_MARKER) and not found:
            try:
                found.append(os.waitstatus_to_exitcode(int(line[len(EXIT_MARKER) :])))
                return
            except ValueError:
                pass
        if line or not found:
            on_line(line)

    return feed


async def _finish(task: asyncio.Task[str]) -> str:
    try:
        async with asyncio.timeout(2):
            return await task
    except TimeoutError:
        task.cancel()
        return ""


@dataclass(frozen=True)
class Completed:
    """How a headless agent run ended and what it printed."""

    returncode: int
    stdout: str
    stderr: str


async def run_captured(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    stdin: bytes | None = None,
) -> Completed:
    """Run ``argv`` headless in ``cwd``: ``stdin`` fed (else closed), output captured.

    Raises :class:`ProcessTimeout` (with the stderr so far) past ``timeout_s``.
    """
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=str(cwd),
        env=dict(env),
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    stdout = asyncio.create_task(proc.stdout.read())
    stderr = asyncio.create_task(proc.stderr.read())
    if stdin is not None and proc.stdin is not None:
        proc.stdin.write(stdin)
        with contextlib.suppress(ConnectionError):
            await proc.stdin.drain()
        proc.stdin.close()
    try:
        async with asyncio.timeout(timeout_s):
            returncode = await proc.wait()
    except BaseException as exc:
        # Timeout or cancellation: the whole tree goes, and the leader is reaped.
        await _stop_group(proc)
        stdout.cancel()
        if isinstance(exc, TimeoutError):
            raise ProcessTimeout(timeout_s, await _text(stderr)) from None
        stderr.cancel()
        raise
    # A helper the agent left running could hold our pipes open forever.
    kill_group(proc.pid)
    return Completed(returncode, await _text(stdout), await _text(stderr))


async def _stop_group(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM the agent's group; SIGKILL what is left once the leader exits or the grace ends.

    Waiting on the leader itself (not polling the group) matters: until we reap
    it, the leader is a zombie that still counts as a member of the group.
    """
    kill_group(proc.pid, signal.SIGTERM)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(KILL_GRACE_S):
            await asyncio.shield(proc.wait())
    kill_group(proc.pid, signal.SIGKILL)
    await asyncio.shield(proc.wait())


async def _text(task: asyncio.Task[bytes]) -> str:
    try:
        async with asyncio.timeout(KILL_GRACE_S):
            data = await task
    except TimeoutError:
        task.cancel()
        return ""
    return data.decode("utf-8", errors="replace")


async def run_interactive(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]) -> int:
    """Run ``argv`` in ``cwd`` with the terminal attached; return its exit status."""
    with _keyboard_interrupts_go_to_child():
        proc = await asyncio.create_subprocess_exec(*argv, cwd=str(cwd), env=dict(env))
        try:
            return await proc.wait()
        except BaseException:
            await _terminate(proc)
            raise


async def _terminate(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM the interactive agent, SIGKILL it after the grace period, reap it."""
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(KILL_GRACE_S):
            await asyncio.shield(proc.wait())
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    await asyncio.shield(proc.wait())


@contextlib.contextmanager
def _keyboard_interrupts_go_to_child() -> Iterator[None]:
    """While a chat runs, Ctrl-C belongs to the agent (which shares our group).

    A Python-level no-op handler rather than SIG_IGN: an ignored signal would
    stay ignored in the child across exec, a handled one is reset to default.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: None)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
