"""Workspaces and MCP configs: one server in each CLI's format, empty configs, sweeping."""

from __future__ import annotations

import json
import os
import subprocess
import uuid

import pytest

from butler.processes import owner_mark
from butler.runtimes.base import McpEndpoint
from butler.runtimes.mcp_config import (
    butler_file,
    claude_entry,
    empty_files,
    gemini_entry,
    opencode_entry,
    servers,
)
from butler.spawner.workspace import OWNER_FILE, Workspace, sweep_leftovers
from tests.security.test_untrusted_files import finishes

MCP = McpEndpoint("health", "http://127.0.0.1:8001/mcp?session=s1", {"X-Butler-Session": "s1"})


def test_every_format_names_only_this_butler(tmp_path):
    ((path, text),) = butler_file(tmp_path, MCP).items()
    assert path == tmp_path / "mcp.json"
    assert json.loads(text) == {
        "mcpServers": {"health": {"type": "http", "url": MCP.url, "headers": MCP.headers}}
    }
    assert servers(MCP, gemini_entry)["health"]["httpUrl"] == MCP.url
    assert servers(MCP, opencode_entry)["health"]["type"] == "remote"
    assert list(servers(MCP, claude_entry)) == ["health"]


def test_the_workspace_writes_what_the_runtime_asks_and_goes_away():
    with Workspace("butler_health_") as ws:
        ws.write(butler_file(ws.path, MCP))
        assert oct(ws.path.stat().st_mode & 0o777) == "0o700"
        assert json.loads((ws.path / "mcp.json").read_text())["mcpServers"]["health"]
        assert sorted(p.name for p in ws.path.iterdir()) == [OWNER_FILE, "mcp.json"]
    assert not ws.path.exists()


def test_no_endpoint_writes_empty_configs():
    with Workspace("butler_ask_") as ws:
        ws.write(empty_files(ws.path))
        for path in empty_files(ws.path):
            assert json.loads(path.read_text()) == {}
    assert json.loads(butler_file(ws.path, None)[ws.path / "mcp.json"]) == {}


def test_sweep_removes_only_folders_of_dead_owners():
    dead = Workspace("butler_sweeptest_").create()
    live = Workspace("butler_sweeptest_").create()
    proc = subprocess.Popen(["true"])
    proc.wait()
    (dead.path / OWNER_FILE).write_text(str(proc.pid))  # a pid that has exited
    removed = sweep_leftovers("butler_sweeptest_")
    assert removed == [dead.path] and live.path.exists()
    assert (live.path / OWNER_FILE).read_text() == owner_mark()
    live.remove()


def test_sweep_removes_what_a_killed_daemon_of_the_same_pid_left():
    # A daemon restarted in a container is given the pid of the one killed before (its
    # init starts it first): that one's workspaces are left, not this daemon's own.
    prefix = f"butler_samepid{uuid.uuid4().hex[:8]}_"
    earlier = [Workspace(prefix).create() for _ in range(2)]
    (earlier[0].path / OWNER_FILE).write_text(f"{os.getpid()}.1")  # same pid, another start
    (earlier[1].path / OWNER_FILE).write_text(str(os.getpid()))  # a bare pid: before marks
    mine = Workspace(prefix).create()
    try:
        removed = sweep_leftovers(prefix)
        assert sorted(removed) == sorted(w.path for w in earlier)
        assert mine.path.is_dir()
    finally:
        mine.remove()


@pytest.mark.parametrize("planted", ["FIFO", "link to /dev/zero"])
def test_an_owner_file_the_runtime_swapped_neither_hangs_nor_keeps_the_sweep(planted):
    """The workspace is the runtime's to write: the sweep at the next start reads its
    owner file as data (docs/security.md, the trust map)."""
    prefix = f"butler_swaptest{uuid.uuid4().hex[:8]}_"
    left = Workspace(prefix).create()
    owner = left.path / OWNER_FILE
    owner.unlink()
    if planted == "FIFO":
        os.mkfifo(owner)
    else:
        owner.symlink_to("/dev/zero")
    removed = finishes(lambda: sweep_leftovers(prefix))
    assert removed == [left.path] and not left.path.exists()
