"""One ``command`` runtime run on the session path's own step into the jail, in-process.

What the spawner does for a session, without its database: the butler's
config, :func:`butler.spawner.sandboxing.jailed` around the invocation, and
the adapter's run inside.
"""

from __future__ import annotations

from pathlib import Path

from butler.config import RuntimeConfig, load_config
from butler.runtimes.base import Invocation, RuntimeResult
from butler.runtimes.command import CommandAdapter
from butler.spawner.sandboxing import jailed
from tests.fakes.runtime import sample_invocation
from tests.helpers import free_port, write_butler


async def run_jailed(
    tmp_path: Path, command: list[str], env: dict[str, str], extra: str = ""
) -> RuntimeResult:
    """``command`` as a butler's command runtime, jailed, with the runtime environment ``env``.

    ``extra`` is more of the butler's ``butler.toml`` (``[butler.sandbox]``...).
    """
    roster = tmp_path / "roster"
    (roster / "shared").mkdir(parents=True, exist_ok=True)
    runtime = {"type": "command", "command": command}
    folder = write_butler(roster, "jailed", port=free_port(), runtime=runtime, extra=extra)
    config = load_config(folder)
    adapter = CommandAdapter(RuntimeConfig(type="command", command=command))
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    invocation: Invocation = sample_invocation(
        tmp_path, cwd=folder, workdir=workdir, home=tmp_path / "home", env=env, mcp=None
    )
    async with jailed(config, "bwrap", invocation) as inside:
        return await adapter.invoke(inside)
