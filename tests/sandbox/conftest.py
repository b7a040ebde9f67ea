"""A real daemon whose runtime is a probe script inside the jail.

A test that needs the jail asks for it (:func:`tests.helpers.require_jail`, in the
``jailed`` fixture): on a machine where bubblewrap cannot start one, it fails naming
``scripts/setup-dev``; it never passes without the jail.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from butler.sandbox.bridge_binary import bridge_binary
from tests.builders.conftest import (  # noqa: F401 - repo and tmux_socket: builder fixtures
    AGENT,
    AGENT_ARGS,
    Builders,
    repo,
    tmux_socket,
    write_builder_butler,
)
from tests.conftest import TEST_DSN
from tests.helpers import DaemonProcess, butler_client, free_port, require_jail, write_butler

PROBE = Path(__file__).with_name("probe.py")
CANARY = "canary-4b1d7e-must-not-leak"
BUTLER = "jailed"


@dataclass
class Jailed:
    """A running butler whose command runtime is the probe, and its paths."""

    daemon: DaemonProcess
    folder: Path
    data: Path
    schema: str

    @property
    def url(self) -> str:
        return self.daemon.url

    async def run(self, plan: dict[str, Any], timeout_s: float = 60) -> dict[str, Any]:
        """Trigger one session with ``plan`` as its prompt; the tool's result."""
        async with butler_client(f"{self.daemon.url}/mcp", timeout=timeout_s + 30) as client:
            args = {"prompt": json.dumps(plan), "timeout_s": timeout_s}
            result = await client.call_tool("trigger", args)
        return result.structured_content

    async def row(self, session_id: str) -> dict[str, Any]:
        conn = await asyncpg.connect(TEST_DSN)
        try:
            row = await conn.fetchrow(
                f'SELECT status, error, output, metadata FROM "{self.schema}".sessions '
                "WHERE id = $1",
                __import__("uuid").UUID(session_id),
            )
        finally:
            await conn.close()
        data = dict(row)
        data["metadata"] = (
            json.loads(data["metadata"]) if isinstance(data["metadata"], str) else data["metadata"]
        )
        return data


def jailed_butler(
    root: Path, schema: str, extra: str = "", env: dict[str, str] | None = None
) -> tuple[DaemonProcess, Path, Path]:
    port = free_port()
    roster = root / "roster"
    (roster / "shared").mkdir(parents=True)
    (roster / "shared" / "NOTE.md").write_text("shared\n")
    runtime = {
        "type": "command",
        "command": ["/usr/bin/python3", "-I", "{cwd}/probe.py", "{prompt_file}", "{mcp_config}"],
    }
    folder = write_butler(roster, BUTLER, port=port, schema=schema, runtime=runtime, extra=extra)
    shutil.copy(PROBE, folder / "probe.py")
    data = root / "data"
    daemon_env = {
        "BUTLER_DATA_DIR": str(data),
        "BUTLER_CANARY_SECRET": CANARY,
        "BUTLER_SANDBOX": "bwrap",
        **(env or {}),
    }
    return DaemonProcess(folder, port=port, database_url=TEST_DSN, env=daemon_env), folder, data


@pytest.fixture
def jailed(tmp_path: Path, schema_name: str) -> Iterator[Jailed]:
    require_jail()
    daemon, folder, data = jailed_butler(tmp_path, schema_name)
    with daemon:
        yield Jailed(daemon, folder, data, schema_name)


@pytest.fixture
def bridge() -> str:
    """The bridge every jail runs (built by ``pip install -e .``, see scripts/setup-dev)."""
    require_jail()
    return str(bridge_binary())


@pytest.fixture
def jailed_builders(
    roster: Path,
    schema_name: str,
    repo: Path,  # noqa: F811 - the fixture imported above
    tmux_socket: str,  # noqa: F811
    _isolated_data_dir: Path,
) -> Iterator[Builders]:
    """A jailed daemon whose interactive runtime is the test agent, copied into its folder."""
    require_jail()
    agent = roster / "tester" / "agent.py"
    python = ["/usr/bin/python3", "-I", str(agent), *AGENT_ARGS, "--mcp", "{mcp_config}"]
    runtime = {"type": "command", "command": [*python, "--once"], "interactive_command": python}
    port = free_port()
    folder = write_builder_butler(roster, schema_name, port, runtime)
    shutil.copy(AGENT, agent)
    env = {"BUTLER_TMUX_SOCKET": tmux_socket, "BUTLER_DATA_DIR": str(_isolated_data_dir)}
    env |= {"ANTHROPIC_API_KEY": "sk-test", "BUTLER_SANDBOX": "bwrap"}
    with DaemonProcess(folder, port=port, database_url=TEST_DSN, env=env) as daemon:
        yield Builders(daemon, folder, repo, tmux_socket, schema_name, _isolated_data_dir)
