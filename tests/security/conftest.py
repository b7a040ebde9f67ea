"""An attacker's view of a butler: a real server in the test's loop, and a runtime gone wrong."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TEST_DSN
from tests.helpers import DaemonProcess, InProcessButler, free_port, write_butler
from tests.sandbox.conftest import Jailed

#: A command runtime that speaks MCP with the config it was given (tests/security/agent.py).
AGENT = Path(__file__).with_name("agent.py")
#: A command runtime that runs, in its jail, the shell script and tool calls its prompt
#: names (tests/security/attacker.py; stdlib only, so it is copied into the butler folder).
ATTACKER = Path(__file__).with_name("attacker.py")
#: The jail probe whose MCP call the attacker makes (stdlib only as well).
PROBE = Path(__file__).parent.parent / "sandbox" / "probe.py"


def attacked_butler(
    tmp_path: Path, schema: str, extra: str = "", timeout_s: int = 240
) -> tuple[DaemonProcess, Jailed]:
    """A jailed daemon (not yet started) in ``tmp_path/roster/victim`` whose sessions run
    :data:`ATTACKER`: ``with daemon: await jailed.run({"sh": ..., "mcp": [...]})``."""
    roster = tmp_path / "roster"
    (roster / "shared").mkdir(parents=True, exist_ok=True)
    runtime = {
        "type": "command",
        "command": [
            "/usr/bin/python3",
            "-I",
            str(roster / "victim" / "attacker.py"),
            "{prompt_file}",
            "{mcp_config}",
            "{system_prompt_file}",
        ],
        "max_concurrent_sessions": 2,
        "timeout_s": timeout_s,
    }
    port = free_port()
    folder = write_butler(roster, "victim", port=port, schema=schema, runtime=runtime, extra=extra)
    shutil.copy(ATTACKER, folder / "attacker.py")
    shutil.copy(PROBE, folder / "probe.py")
    data = tmp_path / "data"
    env = {"BUTLER_DATA_DIR": str(data), "BUTLER_SANDBOX": "bwrap"}
    daemon = DaemonProcess(folder, port=port, database_url=TEST_DSN, env=env)
    return daemon, Jailed(daemon, folder, data, schema)


def owners_git(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The owner's own git, later, outside any jail, as they run it (result unchecked)."""
    argv = ["git", "-c", "user.name=owner", "-c", "user.email=o@o", *args]
    return subprocess.run(argv, cwd=where, capture_output=True, text=True, check=False)


def agent_runtime(**limits: Any) -> dict[str, Any]:
    """``[butler.runtime]`` of a butler whose sessions run the scripted MCP agent."""
    return {
        "type": "command",
        "command": [sys.executable, str(AGENT), "{prompt_file}", "{mcp_config}"],
        **limits,
    }


@pytest.fixture
def serve(roster, schema_name) -> Callable[..., AbstractAsyncContextManager[InProcessButler]]:
    """Start a butler in this loop: ``async with serve(runtime=..., extra=...) as butler``."""

    def start(
        runtime: dict[str, Any] | None = None, extra: str = "", butler_keys: str = ""
    ) -> InProcessButler:
        port = free_port()
        folder = write_butler(
            roster,
            "tester",
            port=port,
            schema=schema_name,
            runtime=runtime or agent_runtime(),
            extra=extra,
        )
        toml = folder / "butler.toml"
        text = toml.read_text().replace(f"port = {port}\n", f"port = {port}\n{butler_keys}", 1)
        toml.write_text(text)
        return InProcessButler(folder, database_url=TEST_DSN)

    return start


@pytest.fixture
async def butler(serve) -> AsyncIterator[InProcessButler]:
    async with serve() as running:
        yield running
