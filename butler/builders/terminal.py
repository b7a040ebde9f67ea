"""A builder's terminal: its first prompt typed in, its runtime ended on request.

The task reaches a TUI the way a person's would: pasted into its pane once
the TUI shows it takes input, then Enter. So it is never an argument of any
process (``ps`` shows every argument to every local user), and every TUI
gets it the same way. (How the runtime ended and what it used are the
spawner's to record: ``spawner/endings.py``.)
"""

from __future__ import annotations

import asyncio
import logging
import signal

from butler.builders.tmux import Tmux
from butler.errors import ButlerError
from butler.runtimes.base import Command
from butler.runtimes.process import group_alive, kill_group

log = logging.getLogger(__name__)

#: How long a TUI may take to start before its prompt is given up on (a cold Copilot
#: unpacks itself first).
READY_TIMEOUT_S = 180.0
#: How often the pane is looked at while waiting.
POLL_S = 0.25
#: A ready screen counts as settled once unchanged for this long, waited for at most
#: SETTLE_MAX_S.
SETTLE_S = 0.5
SETTLE_MAX_S = 5.0
#: How long a paste may take to show before Enter is pressed anyway.
PASTE_SHOWN_S = 5.0
#: After the paste shows: a TUI that sees Enter within a burst of input takes it for
#: a newline of the paste (Codex does), so Enter comes as a separate keystroke.
ENTER_AFTER_S = 0.5


async def _wait_ready(tmux: Tmux, name: str, ready: tuple[str, ...]) -> str | None:
    """The screen once it shows one of ``ready``; None when the pane died or time ran out."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + READY_TIMEOUT_S
    while loop.time() < deadline:
        screen = await tmux.capture(name)
        if any(marker in screen for marker in ready):
            return screen
        if await tmux.pane_pid(name) is None:
            return None
        await asyncio.sleep(POLL_S)
    return None


def typable(text: str) -> str:
    """``text`` as it may be pasted: no control character but newline and tab.

    A task may come from a session's model; an escape sequence in it could end
    the bracketed paste early and press keys of the TUI's own (a slash command).
    """
    return "".join(
        c for c in text if c in "\n\t" or not (ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0)
    ).strip()


async def type_prompt(tmux: Tmux, name: str, command: Command) -> bool:
    """Type the command's first prompt into the builder's pane once its TUI is ready.

    Runs on its own (the spawn has returned): a failure is logged, never raised.
    """
    text = typable(command.typed_prompt)
    if not text:
        return True
    try:
        return await _type(tmux, name, command, text)
    except ButlerError as exc:
        log.warning("builder %s: its task could not be typed in: %s", name, exc)
        return False


async def _settled(tmux: Tmux, name: str, screen: str) -> str:
    """The screen once it stops changing (a TUI may draw its prompt before it finishes
    starting), or after :data:`SETTLE_MAX_S` for one that animates."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SETTLE_MAX_S
    while loop.time() < deadline:
        await asyncio.sleep(SETTLE_S)
        now = await tmux.capture(name)
        if now == screen:
            break
        screen = now
    return screen


async def _type(tmux: Tmux, name: str, command: Command, text: str) -> bool:
    ready = await _wait_ready(tmux, name, command.ready or ("",))
    if ready is None:
        log.warning("builder %s: its terminal never got ready; the task was not typed", name)
        return False
    before = await _settled(tmux, name, ready)
    await tmux.paste(name, text)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PASTE_SHOWN_S
    while loop.time() < deadline and await tmux.capture(name) == before:
        await asyncio.sleep(POLL_S)
    await asyncio.sleep(ENTER_AFTER_S)
    await tmux.keys(name, "Enter")
    return True


#: How long a stopped runtime has to end on SIGTERM before its process group is killed.
STOP_GRACE_S = 5.0


async def end_runtime(tmux: Tmux, name: str, grace_s: float = STOP_GRACE_S) -> None:
    """End what a builder's pane runs: SIGTERM to its process group, SIGKILL after ``grace_s``.

    The pane runs the launcher as its session leader, so its process group holds
    the launcher, the runtime and whatever the runtime started (the jail keeps it
    in that group for terminal sessions). The pane itself stays, with its last screen.
    """
    pid = await tmux.pane_pid(name)
    if pid is None or not kill_group(pid, signal.SIGTERM):
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace_s
    while loop.time() < deadline and group_alive(pid):
        await asyncio.sleep(POLL_S)
    kill_group(pid, signal.SIGKILL)
