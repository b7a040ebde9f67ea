"""Chat commands, answered by the daemon without a session: read them, word their answers.

Pure: :func:`parse` finds a command at the start of a message, and the
functions below word each answer from facts the caller gathered (the
:class:`Status` of the butler and the conversation). A channel decides which
commands it offers and does what one asks (ends a conversation, stops a
session); the web chat (:mod:`.web`) is the first to use them.

Only a command standing alone is one: ``/help me word this letter`` is a
message for the butler, never lost to a command. ``/new`` alone ends the
conversation; ``/new what is due?`` starts the next one with that message.
A word after the slash that is no command (``/health``, a butler's name) is
left for the channel to read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from butler.channels.text import one_line

#: Every command, and what ``/help`` says it does.
COMMANDS: Mapping[str, str] = {
    "new": "start a new conversation (text after it is the new one's first message)",
    "stop": "stop the answer being written in this conversation",
    "status": "what this butler is running and has queued, and its last error",
    "help": "what this butler does, and these commands",
}
#: The commands of a chat app's channel (Telegram, Matrix, email, Slack, Discord), where
#: one bot may answer for several butlers and a person pairs by code.
CHAT_COMMANDS: Mapping[str, str] = {
    "help": "what answers here, and these commands",
    "butlers": "which butlers answer here, and how to pick one",
    "new": COMMANDS["new"],
    "stop": COMMANDS["stop"],
    "status": COMMANDS["status"],
    "pair": "pair again with a new code from the owner: /pair CODE",
}
#: Not listed by ``/help``: Telegram's Start button sends it (with a code from a link).
HIDDEN: Mapping[str, str] = {"start": "what can be done here"}
#: The commands that take text after them.
TAKES_TEXT = frozenset({"new", "pair", "start"})
#: The commands answered at once, not after the answer being written in the same chat.
AT_ONCE = frozenset({"stop", "status", "help", "butlers"})
#: ``/status``, ``/new what is due?``, ``/help@my_bot`` (Telegram names its bot in groups).
_COMMAND = re.compile(r"^\s*/([a-z]{2,20})(?:@[A-Za-z0-9_]{1,64})?(?=$|\s)\s*(.*)$", re.S | re.I)
#: The longest error line ``/status`` repeats.
ERROR_CHARS = 200


@dataclass(frozen=True)
class Command:
    """A command read from a message, and the text that followed it."""

    name: str
    #: What followed the command: the first message of a new conversation, for ``/new``.
    rest: str = ""


def parse(text: str, offered: Mapping[str, str] = COMMANDS) -> Command | None:
    """The command ``text`` is, among those ``offered``; None when it is a message."""
    match = _COMMAND.match(text)
    if match is None:
        return None
    name, rest = match[1].lower(), match[2].strip()
    if name not in offered or (rest and name not in TAKES_TEXT):
        return None
    return Command(name, rest)


@dataclass(frozen=True)
class Failure:
    """A session that failed: which, when, and why."""

    session_id: str
    at: datetime | None
    error: str


@dataclass(frozen=True)
class Status:
    """What ``/status`` reports, gathered by the channel."""

    butler: str
    #: The session answering in this conversation now, if one is.
    answering: str | None
    #: Messages of this conversation waiting for that answer to end first.
    waiting: int
    running: int
    queued: int
    #: The butler's ``max_concurrent_sessions``.
    slots: int
    #: The butler's latest failed session, if any.
    last_failure: Failure | None


def help_text(butler: str, description: str, offered: Mapping[str, str] = COMMANDS) -> str:
    """``/help``: who answers here, what it is for, and the commands."""
    about = " ".join(description.split()) or "a butler"
    lines = [f"{butler}: {about}", "", "Send a message to talk to it. Commands:"]
    lines += [f"/{name} – {what}" for name, what in offered.items()]
    return "\n".join(lines)


def status_text(status: Status) -> str:
    """``/status``: this conversation, the butler's sessions, and its last error."""
    if status.answering:
        here = f"answering this conversation (session {status.answering[:8]})"
        if status.waiting:
            here += f"; {status.waiting} more message(s) wait for it"
    else:
        here = "not answering anything in this conversation"
    lines = [
        f"{status.butler}: {here}.",
        f"Sessions: {status.running} running, {status.queued} queued "
        f"(at most {status.slots} at once).",
    ]
    failure = status.last_failure
    if failure is None:
        lines.append("Last error: none.")
    else:
        at = failure.at
        when = at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if at else "when unknown"
        error = one_line(failure.error, ERROR_CHARS)
        lines.append(f"Last error: session {failure.session_id[:8]}, {when}: {error}")
    return "\n".join(lines)


def stop_text(stopped: bool) -> str:
    """``/stop``: whether there was an answer to stop."""
    if stopped:
        return "Stopped: the answer being written was cancelled."
    return "Nothing to stop: no answer is being written in this conversation."


def new_text() -> str:
    """``/new`` alone."""
    return "New conversation: the next message starts afresh."


def butlers_text(butlers: Mapping[str, str], current: str | None) -> str:
    """``/butlers``: who answers here, what each is for, and how to pick one."""
    if len(butlers) == 1:
        [(name, description)] = butlers.items()
        return f"Only {name} answers here: {' '.join(description.split()) or 'a butler'}"
    lines = ["Butlers that answer here:"]
    for name, description in butlers.items():
        mark = " (this conversation's)" if name == current else ""
        lines.append(f"/{name}{mark} – {' '.join(description.split()) or 'a butler'}")
    lines += ["", "Start a message with /name to pick one; without, the switchboard picks."]
    return "\n".join(lines)


def chat_help(butlers: Mapping[str, str], current: str | None) -> str:
    """``/help`` on a chat app: the butler of this conversation (or the roster), and the
    commands."""
    if len(butlers) == 1 or current in butlers:
        name = current if current in butlers else next(iter(butlers))
        return help_text(name, butlers[name], CHAT_COMMANDS)
    lines = [butlers_text(butlers, None), "", "Commands:"]
    lines += [f"/{name} – {what}" for name, what in CHAT_COMMANDS.items()]
    return "\n".join(lines)


def pair_text(paired: bool | None) -> str:
    """``/pair CODE`` from a sender paired already: whether the code was good (None: no code)."""
    if paired is None:
        return "Send /pair followed by the code the owner gave you (butler channels pair)."
    if paired:
        return "Paired again with the new code."
    return "That code is not good: used, expired or mistyped. Ask the owner for a new one."
