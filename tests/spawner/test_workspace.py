"""Workspaces and MCP configs: one server in each CLI's format, empty configs, sweeping."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

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
from butler.spawner.workspace import OWNER_FILE, Workspace, sweep_leftovers, temp_root
from tests.security.untrusted import finishes

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
        assert sorted(p.name for p in ws.path.iterdir()) == ["mcp.json"]
    assert not ws.path.exists()


def test_no_endpoint_writes_empty_configs():
    with Workspace("butler_ask_") as ws:
        ws.write(empty_files(ws.path))
        for path in empty_files(ws.path):
            assert json.loads(path.read_text()) == {}
    assert json.loads(butler_file(ws.path, None)[ws.path / "mcp.json"]) == {}


def _ended_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_sweep_removes_only_folders_of_dead_owners():
    dead = Workspace("butler_sweeptest_", owner=str(_ended_pid())).create()
    live = Workspace("butler_sweeptest_").create()
    removed = sweep_leftovers("butler_sweeptest_")
    assert removed == [dead.path] and live.path.exists()
    live.remove()


def test_sweep_removes_what_a_killed_daemon_of_the_same_pid_left():
    # A daemon restarted in a container is given the pid of the one killed before (its
    # init starts it first): that one's workspaces are left, not this daemon's own.
    prefix = f"butler_samepid{uuid.uuid4().hex[:8]}_"
    earlier = Workspace(prefix, owner=f"{os.getpid()}.1").create()  # same pid, another start
    mine = Workspace(prefix).create()
    try:
        assert sweep_leftovers(prefix) == [earlier.path]
        assert mine.path.is_dir()
    finally:
        mine.remove()


def test_a_sweep_never_takes_a_workspace_while_it_is_being_made():
    """A worker of the same butler sweeps at its start: a workspace the daemon is making
    at that instant (its folder there, nothing in it yet) is the daemon's, not a leftover.
    The owner was once written into the folder after it was made, and a sweep in between
    removed it: the session failed with "cannot create the session's workspace"."""
    prefix = f"butler_making{uuid.uuid4().hex[:8]}_"
    making = Workspace(prefix)
    making.path.mkdir(mode=0o700)  # made, not one file written yet
    try:
        assert sweep_leftovers(prefix) == [] and making.path.is_dir()
    finally:
        making.remove()


@pytest.mark.parametrize("prefix", ["butler-ask-", "butler_foo_"])
def test_a_live_workspace_survives_the_sweep_of_any_prefix(prefix):
    """`butler ask` sweeps its own prefix, which ends in "-", before every call: a second
    ask at the same time took the first one's workspace while its agent ran."""
    live = Workspace(prefix).create()
    other_butler = Workspace(f"{prefix}bar_").create()  # butler "foo_bar" under "foo"'s glob
    try:
        assert sweep_leftovers(prefix) == []
        assert live.path.is_dir() and other_butler.path.is_dir()
    finally:
        live.remove()
        other_butler.remove()


def test_a_butler_name_ending_in_digits_is_not_read_as_an_owner():
    """A workspace of butler "foo_7" made before the upgrade ends in "_7_<uuid>": its owner
    file says whose it is, not pid 7."""
    prefix = f"butler_digits{uuid.uuid4().hex[:8]}_7_"
    live = _made_before_owners_were_named(prefix, owner_mark())
    dead = _made_before_owners_were_named(prefix, str(_ended_pid()))
    try:
        assert sweep_leftovers(prefix) == [dead] and live.is_dir()
    finally:
        shutil.rmtree(live)


def _made_before_owners_were_named(prefix: str, owner: str | None) -> Path:
    folder = temp_root() / f"{prefix}{uuid.uuid4()}"
    folder.mkdir(mode=0o700)
    if owner is not None:
        (folder / OWNER_FILE).write_text(owner)
    return folder


def test_sweep_reads_the_owner_file_of_a_workspace_made_before_an_upgrade():
    prefix = f"butler_upgrade{uuid.uuid4().hex[:8]}_"
    dead = _made_before_owners_were_named(prefix, str(_ended_pid()))
    bare = _made_before_owners_were_named(prefix, str(os.getpid()))  # a bare pid: before marks
    live = _made_before_owners_were_named(prefix, owner_mark())
    try:
        assert sorted(sweep_leftovers(prefix)) == sorted([dead, bare])
        assert live.is_dir()
    finally:
        shutil.rmtree(live)


@pytest.mark.parametrize("planted", ["FIFO", "link to /dev/zero"])
def test_an_owner_file_the_runtime_swapped_neither_hangs_nor_keeps_the_sweep(planted):
    """The workspace is the runtime's to write: the sweep at the next start reads the
    owner file of a workspace made before an upgrade as data (docs/security.md, the
    trust map)."""
    prefix = f"butler_swaptest{uuid.uuid4().hex[:8]}_"
    left = _made_before_owners_were_named(prefix, None)
    owner = left / OWNER_FILE
    if planted == "FIFO":
        os.mkfifo(owner)
    else:
        owner.symlink_to("/dev/zero")
    removed = finishes(lambda: sweep_leftovers(prefix))
    assert removed == [left] and not left.exists()
