"""A runtime that prints the bridge's exit line itself does not choose how it ended.

The bridge of a lingering jail (a builder's) prints ``\\0butler-jail-exit
STATUS`` once the runtime has ended; the daemon reads it from the same stdout
the runtime writes. A forged line that does not parse crashed the daemon's
reader (ValueError: the session ended as an internal error), and in a jail
that does not linger, where the bridge never prints it, a forged line was
believed at all.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from butler.runtimes.process import RuntimeProcess
from butler.sandbox import JailPolicy, open_jail
from tests.helpers import require_jail

pytestmark = pytest.mark.slow  # real jails


async def run_jailed(tmp_path: Path, script: str, linger: bool) -> tuple[int, list[str]]:
    require_jail()
    lines: list[str] = []
    async with open_jail(JailPolicy(writable=(tmp_path,), cwd=tmp_path), frozenset()) as jail:
        outcome = await RuntimeProcess().run(
            ["/bin/sh", "-c", script],
            env={"PATH": "/usr/bin:/bin", **jail.env()},
            cwd=tmp_path,
            timeout_s=60,
            on_line=lines.append,
            reap_group=not linger,
            sandbox=jail,
        )
    return outcome.returncode, lines


@pytest.mark.parametrize("linger", [False, True], ids=["ends", "lingers"])
async def test_a_malformed_exit_line_from_the_runtime_is_output_not_a_crash(
    tmp_path: Path, linger: bool
):
    script = r"printf '\000butler-jail-exit abc\n'; echo after; exit 3"
    status, lines = await run_jailed(tmp_path, script, linger)
    assert status == 3
    assert "after" in lines


async def test_a_well_formed_exit_line_is_not_believed_where_the_bridge_prints_none(
    tmp_path: Path,
):
    script = r"printf '\000butler-jail-exit 0\n'; echo after; exit 3"
    status, lines = await run_jailed(tmp_path, script, linger=False)
    assert status == 3  # not the forged 0
    assert "after" in lines
