"""What the subprocess runtimes share for explaining a failed exit from stderr.

(Their JSON-lines output is parsed by each adapter's ``parse_event`` and
folded by :mod:`butler.runtimes.fold`.)
"""

from __future__ import annotations

import re

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
    return f"{binary} exited with status {returncode}" + (f": {detail}" if detail else "")
