"""Workspaces: one server in every CLI's format, empty configs, sweeping leftovers."""

from __future__ import annotations

import json
import os
import subprocess

from butler.runtimes.base import McpEndpoint
from butler.spawner.workspace import OWNER_FILE, Workspace, sweep_leftovers

MCP = McpEndpoint("health", "http://127.0.0.1:8001/mcp?session=s1", {"X-Butler-Session": "s1"})


def test_every_format_names_only_this_butler():
    with Workspace("butler_health_") as ws:
        ws.write_configs(MCP)
        data = {rel: json.loads(p.read_text()) for rel, p in ws.configs.items()}
        assert oct(ws.path.stat().st_mode & 0o777) == "0o700"
    assert data["mcp.json"] == {
        "mcpServers": {"health": {"type": "http", "url": MCP.url, "headers": MCP.headers}}
    }
    assert data[".gemini/settings.json"]["mcpServers"]["health"]["httpUrl"] == MCP.url
    assert list(data[".cursor/mcp.json"]["mcpServers"]) == ["health"]
    assert data["opencode.json"]["mcp"]["health"]["type"] == "remote"
    assert not ws.path.exists()


def test_no_endpoint_writes_empty_configs():
    with Workspace("butler_ask_") as ws:
        ws.write_configs(None)
        for path in ws.configs.values():
            assert json.loads(path.read_text()) == {}


def test_sweep_removes_only_folders_of_dead_owners():
    dead = Workspace("butler_sweeptest_").create()
    live = Workspace("butler_sweeptest_").create()
    proc = subprocess.Popen(["true"])
    proc.wait()
    (dead.path / OWNER_FILE).write_text(str(proc.pid))  # a pid that has exited
    removed = sweep_leftovers("butler_sweeptest_")
    assert removed == [dead.path] and live.path.exists()
    assert (live.path / OWNER_FILE).read_text() == str(os.getpid())
    live.remove()
