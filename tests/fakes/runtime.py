"""An in-process fake runtime adapter, and where the fake Claude CLI lives."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from butler.runtimes.base import (
    Invocation,
    McpEndpoint,
    ProgressSink,
    RuntimeAdapter,
    RuntimeFailure,
    RuntimeResult,
    ToolCall,
    Usage,
)

FAKE_CLAUDE = Path(__file__).resolve().parents[1] / "runtimes" / "fake_claude.py"


class FakeAdapter(RuntimeAdapter):
    """An in-process runtime: records what it was given and does what the test says."""

    type_name = "fake"
    binary_name = "fake"
    supports_resume = True

    def __init__(self, config: Any = None, script: Any = None) -> None:
        from butler.config import RuntimeConfig

        super().__init__(config or RuntimeConfig())
        self.invocations: list[Invocation] = []
        self.workspaces: list[dict[str, Any]] = []
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.release.set()
        self.script = script

    async def invoke(
        self, invocation: Invocation, progress: ProgressSink | None = None
    ) -> RuntimeResult:
        import json

        self.invocations.append(invocation)
        mcp_json = invocation.workdir / "mcp.json"
        self.workspaces.append(
            {"path": invocation.workdir, "mcp": json.loads(mcp_json.read_text())}
        )
        self.started.set()
        await self.release.wait()
        if self.script is not None:
            return await self.script(invocation)
        return RuntimeResult(
            output=f"echo: {invocation.prompt}",
            tool_calls=[ToolCall("state_get", {"key": "tasks"}, "t1")],
            usage=Usage(100, 20, 5, 1),
            cost_usd=0.01,
            runtime_session_id="rt-1",
        )


async def failing(invocation: Invocation) -> RuntimeResult:
    raise RuntimeFailure("Connection refused", RuntimeResult(output="partial words"))


def sample_invocation(tmp_path: Path, **changes: Any) -> Invocation:
    """An invocation of the butler "health" as the spawner would build it, for pure-part tests."""
    values: dict[str, Any] = dict(
        prompt="Check overdue tasks",
        system_prompt="You are health.",
        cwd=tmp_path,
        workdir=tmp_path / "work",
        home=tmp_path / "home",
        env={"PATH": "/usr/bin"},
        mcp=McpEndpoint("health", "http://127.0.0.1:8001/mcp?session=s", {"X-Butler-Session": "s"}),
        max_turns=7,
        timeout_s=60,
        cache_dir=tmp_path / "cache",
    )
    values.update(changes)
    return Invocation(**values)
