"""An interactive jail (``butler chat``, a builder) cannot type into the terminal it shares.

Without ``--new-session`` (a terminal program needs its terminal), a process
in the jail could push characters into the terminal's input with the
``TIOCSTI`` ioctl; the person's shell reads them once the agent has gone, and
runs them outside the jail. The filter refuses that ioctl (also with high
bits set, which the kernel ignores) and ``TIOCLINUX``.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import termios
from pathlib import Path

import pytest

from butler.sandbox import JailPolicy, open_jail
from butler.sandbox.egress import Target
from tests.helpers import require_jail

pytestmark = pytest.mark.slow

#: Run in the jail: push a command into its terminal's input queue, three ways.
INJECT = r"""
import errno, fcntl, json, termios
seen = {}
for name, request in [("plain", termios.TIOCSTI), ("high_bits", termios.TIOCSTI | 1 << 32)]:
    try:
        for ch in b"echo INJECTED\n":
            fcntl.ioctl(0, request, bytes([ch]))
        seen[name] = "ok"
    except OSError as exc:
        seen[name] = errno.errorcode[exc.errno]
print(json.dumps(seen), flush=True)
"""


async def run_on_a_terminal(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[str, bytes]:
    """Run ``argv`` with a new pty as its controlling terminal; its output, and what
    was left unread in the terminal's input after it ended (what a shell would read next)."""
    master, slave = os.openpty()

    def own_terminal() -> None:  # the child leads a session whose terminal is the pty
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    attrs = termios.tcgetattr(slave)
    attrs[3] &= ~termios.ECHO  # the pty does not echo the injected text back as output
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    process = await asyncio.create_subprocess_exec(
        *argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd,
        preexec_fn=own_terminal,
    )  # fmt: skip
    await asyncio.wait_for(process.wait(), 60)
    os.set_blocking(master, False)
    output = b""
    while True:
        try:
            output += os.read(master, 65536)
        except (BlockingIOError, OSError):
            break
    os.set_blocking(slave, False)
    attrs[3] &= ~termios.ICANON
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    try:
        left = os.read(slave, 65536)
    except BlockingIOError:
        left = b""
    os.close(master)
    os.close(slave)
    return output.decode(errors="replace"), left


async def test_a_jailed_terminal_program_cannot_type_into_the_persons_terminal(
    tmp_path: Path,
) -> None:
    require_jail()
    policy = JailPolicy(writable=(tmp_path,), cwd=tmp_path)
    async with open_jail(policy, frozenset({Target("127.0.0.1", 9)})) as jail:
        argv = jail.wrap(["/usr/bin/python3", "-I", "-c", INJECT], interactive=True)
        env = {"PATH": "/usr/bin:/bin", **jail.env()}
        output, left = await run_on_a_terminal(argv, env, tmp_path)
    seen = json.loads(output.strip().splitlines()[-1])
    assert b"INJECTED" not in left, left
    assert seen == {"plain": "EPERM", "high_bits": "EPERM"}, (seen, output)
