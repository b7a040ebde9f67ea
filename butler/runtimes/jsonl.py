"""What the subprocess runtimes share for explaining a failed exit from stderr.

(Their JSON-lines output is parsed by each adapter's ``parse_event`` and
folded by :mod:`butler.runtimes.fold`.)
"""

from __future__ import annotations

import re
import signal

_SIGNALS = {int(s) for s in signal.Signals}
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_ERROR_LINE = re.compile(r"^\s*(\w*error\b|fatal\b)", re.IGNORECASE)


def stderr_summary(stderr: str) -> str:
    """The line of a CLI's stderr that says what went wrong, colours removed.

    CLIs print the error first and usage hints or stack frames after it, so
    the first line that starts like an error wins; otherwise the last lines.
    """
    lines = [_ANSI.sub("", line).strip() for line in stderr.splitlines()]
    lines = [line for line in lines if line]
    for line in lines:
        if _ERROR_LINE.match(line):
            return line[:800]
    return " | ".join(lines[-3:])[:800]


def exit_message(binary: str, returncode: int, stderr: str) -> str:
    """One line for a CLI that exited non-zero without saying why on stdout."""
    detail = stderr_summary(stderr)
    return f"{binary} exited with {status_text(returncode)}" + (f": {detail}" if detail else "")


def status_text(returncode: int) -> str:
    """``status N``, naming the signal behind it when there is one.

    A process killed by signal N is seen as -N by its direct parent, but as
    128 + N through the jail (bubblewrap) or a shell: a crashed runtime then
    ends with a mere status, and the signal's name is what a person looks up.
    """
    number = -returncode if returncode < 0 else returncode - 128
    if returncode == 0 or number not in _SIGNALS:
        return f"status {returncode}"
    shown = f"128 + {number}: " if returncode > 0 else ""
    return f"status {returncode} ({shown}killed by signal {signal.Signals(number).name})"
