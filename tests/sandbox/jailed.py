"""One command run in a fresh jail, as the bridge tests run it: its end, its output."""

from __future__ import annotations

import asyncio
from pathlib import Path

from butler.sandbox import JailPolicy
from butler.sandbox.egress import Target
from butler.sandbox.jail import start_jail


async def jailed(
    folder: Path,
    argv: list[str],
    allowed: frozenset[Target] = frozenset(),
    linger: bool = False,
    policy: JailPolicy | None = None,
) -> tuple[int, bytes, bytes, int]:
    """``argv`` run in a jail that writes only ``folder`` (or ``policy``'s): its exit
    status, stdout, stderr, and the jail's proxy port."""
    jail = await start_jail(policy or JailPolicy(writable=(folder,), cwd=folder), allowed)
    try:
        proc = await asyncio.create_subprocess_exec(
            *jail.wrap(argv, linger=linger),
            env={"PATH": "/usr/bin:/bin", **jail.env()},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode is not None
        return proc.returncode, out, err, jail.proxy_port
    finally:
        await jail.close()
