"""Running an agent CLI for ``ask`` (captured, headless) and ``chat`` (on the terminal).

Both take an argv and never a shell. Headless runs get a session of their
own, so the agent and everything it starts form one process group that is
killed as a whole on timeout or cancellation. Interactive runs must instead
stay in butler's own process group: that is the terminal's foreground group,
the one that may read the keyboard and receives Ctrl-C and window resizes.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from butler.runtimes.process import KILL_GRACE_S, kill_group


@dataclass(frozen=True)
class Completed:
    """How a headless agent run ended and what it printed."""

    returncode: int
    stdout: str
    stderr: str


class TimedOut(Exception):
    """The headless run outlived its limit; its process group was killed."""

    def __init__(self, timeout_s: float, stderr: str) -> None:
        super().__init__(f"no answer within {timeout_s:g} s")
        self.timeout_s = timeout_s
        self.stderr = stderr


async def run_captured(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    stdin: bytes | None = None,
) -> Completed:
    """Run ``argv`` headless in ``cwd``: ``stdin`` fed (else closed), stdout and stderr captured."""
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
            raise TimedOut(timeout_s, await _text(stderr)) from None
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
