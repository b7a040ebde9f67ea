"""An attacker's view of a butler: a real server in the test's loop, and a runtime gone wrong."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TEST_DSN
from tests.helpers import InProcessButler, free_port, write_butler

#: A command runtime that speaks MCP with the config it was given (tests/security/agent.py).
AGENT = Path(__file__).with_name("agent.py")


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
