"""A builder's terminal session: its first prompt typed in, how it ended, what it used.

The task reaches a TUI the way a person's would: pasted into its pane once
the TUI shows it takes input, then Enter. So it is never an argument of any
process (``ps`` shows every argument to every local user), and every TUI
gets it the same way. How a builder ended comes from the launcher's exit
record; what it used from the CLI's own transcript in its private home.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import Any

from butler.builders.tmux import Tmux
from butler.errors import ButlerError
from butler.runtimes.base import Command, Transcript
from butler.runtimes.process import group_alive, kill_group

log = logging.getLogger(__name__)

#: How a runtime ended: ``{"status": code, "signal": number}``, one of them None.
Exit = dict[str, int | None]
#: Signals that mean someone stopped the runtime, rather than that it broke.
STOP_SIGNALS = {signal.SIGHUP, signal.SIGINT, signal.SIGTERM}
_SIGNALS = {int(s) for s in signal.Signals}
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


def end_of(ended: Exit | None) -> tuple[str, str | None]:
    """A finished builder's status and error, from how its runtime's process ended.

    Without an exit record the runtime's end was not seen (its pane was closed, or
    the launcher itself killed): ``ended``, distinct from a stop someone asked for.
    """
    if ended is None:
        return "ended", "its runtime ended without an exit record (tmux session closed)"
    code, sig = ended.get("status"), ended.get("signal")
    if sig is not None:
        name = signal.Signals(sig).name if sig in _SIGNALS else str(sig)
        return ("cancelled" if sig in STOP_SIGNALS else "failed"), f"runtime ended by signal {name}"
    if code == 0:
        return "succeeded", None
    return "failed", f"runtime exited with status {code}"


def usage_fields(transcript: Transcript | None) -> dict[str, Any]:
    """The session outcome's usage fields from a transcript (none when there is none)."""
    if transcript is None:
        return {}
    usage = transcript.usage
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "cost_usd": transcript.cost_usd,
        "runtime_session_id": transcript.session_id,
    }


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
