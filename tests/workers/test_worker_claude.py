"""The genuine Claude Code as a session on a worker: jailed on the worker's "machine",
calling the fake model server and its butler's MCP tools across the link, and
recorded by the daemon as a local session is."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import psutil
import pytest

from butler.store.embedded import EmbeddedPostgres
from tests.fakes.cli_recipes import RECIPES
from tests.fakes.model_server import FakeModelServer, Text, ToolCall
from tests.helpers import butler_client, free_port, require_cli, require_jail
from tests.workers.machines import machine
from tests.workers.tester import LinkDaemon, link_worker, output_of

pytestmark = pytest.mark.slow

CLAUDE = RECIPES["claude"]
KEY = "fake-model-key-7c21"


def claude_butler(roster: Path, host: str, port: int) -> Path:
    folder = roster / "tester"
    folder.mkdir(parents=True)
    runtime = {
        "type": "claude-code",
        "cli_path": str(CLAUDE.binary),
        "args": ["--verbose"],
        "workers": "remote",
        "timeout_s": 120,
    }
    lines = ["[butler]", 'name = "tester"', f"port = {port}", f'host = "{host}"']
    lines += ["[butler.db]", 'schema = "workers_test"', "[butler.runtime]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in runtime.items()]
    lines += ["[butler.env]", 'optional = ["ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"]']
    (folder / "butler.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "CLAUDE.md").write_text("You are a test butler on a worker.\n", encoding="utf-8")
    return folder


async def _jails_of(worker: psutil.Process, seen: set[str]) -> None:
    """Note the names of the worker's descendants until cancelled (bwrap: a jail)."""
    while True:
        try:
            seen.update(child.name() for child in worker.children(recursive=True))
        except psutil.Error:
            pass
        await asyncio.sleep(0.1)


async def test_the_genuine_claude_code_runs_jailed_on_a_worker_calls_its_butler_and_is_recorded(
    own_postgres, tmp_path
):
    require_cli(CLAUDE.missing_reason())
    require_jail()
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    roster = tmp_path / "roster"
    try:
        # The model API answers on the daemon's end of the link: the worker reaches it
        # across the link, as it would reach the real one across the internet.
        with machine() as place, FakeModelServer(host=place.peer) as model:
            call = ToolCall("state_set", {"key": "k", "value": "from-claude"})
            model.script = [call, Text("Set.")]
            port = free_port()
            folder = claude_butler(roster, place.peer, port)
            daemon = LinkDaemon(folder, port=port, database_url=dsn, host=place.peer).start()
            worker = None
            seen: set[str] = set()
            try:
                env = {
                    "BUTLER_SANDBOX": "bwrap",
                    "ANTHROPIC_BASE_URL": model.url,
                    "ANTHROPIC_API_KEY": KEY,
                }
                worker = link_worker(place, roster, dsn, tmp_path / "worker-data", env)
                watch = asyncio.create_task(_jails_of(psutil.Process(worker.pid), seen))
                async with butler_client(f"{daemon.url}/mcp", timeout=180) as client:
                    result = await client.call_tool("trigger", {"prompt": "Store the value"})
                    answer = result.structured_content
                    state = await client.call_tool("state_get", {"key": "k"})
                    row = (
                        await client.call_tool("session_get", {"session_id": answer["session_id"]})
                    ).structured_content
                watch.cancel()
            finally:
                if worker is not None:
                    worker.terminate()
                    output = output_of(worker, tmp_path / "worker-data")
                    (tmp_path / "worker.log").write_text(output)
                daemon.stop()
        assert answer["success"], (answer, output[-3000:])
        assert answer["output"] == "Set.", row["metadata"]
        assert "from-claude" in state.content[0].text  # its butler's tool, across the link
        assert "bwrap" in seen  # the CLI ran inside the jail on the worker
        assert row["status"] == "succeeded" and row["runtime"] == "claude-code"
        assert [c["name"] for c in row["tool_calls"]] == ["state_set"]
        assert row["input_tokens"] > 0 and row["runtime_session_id"]
        assert row["metadata"]["worker"]
        # The butler's system prompt, from the worker's copy of its folder, reached the model.
        assert "You are a test butler on a worker." in json.dumps(model.requests[0].body)
        assert model.headers[0].get("x-api-key") == KEY
    finally:
        await server.stop()
