"""A builder's life after spawn: listing, attaching, ending, pruning, headless runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.builders.conftest import Builders, kill_tmux_server, screen
from tests.helpers import wait_until

pytestmark = pytest.mark.slow


def tmux(socket: str, *args: str) -> str:
    done = subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True)
    return done.stdout


def listed(builders: Builders, *args: str) -> dict[str, dict]:
    done = builders.cli("builders", "list", "--json", *args)
    assert done.returncode == 0, done.stderr
    return {b["id"]: b for b in json.loads(done.stdout)}


def end(builders: Builders, builder: dict, line: str = "exit") -> dict:
    """Type ``line`` into the agent, then wait for the daemon to record its end."""
    builders.wait_screen(builder, "agent> ")
    tmux(builders.socket, "send-keys", "-t", f"={builder['tmux_session']}:", line, "Enter")
    try:
        return wait_until(
            lambda: (b := listed(builders)[builder["id"]])["status"] != "running" and b
        )
    except TimeoutError:
        fmt = "#{session_name} dead=#{pane_dead} status=#{pane_dead_status}"
        panes = tmux(builders.socket, "list-panes", "-a", "-F", fmt)
        raise AssertionError(f"{builder['id']} still running; tmux says:\n{panes}") from None


def test_builders_are_listed_grouped_by_type(builders: Builders):
    task = builders.spawn("Fix bug")
    shell = builders.spawn("--shell")
    protocol = builders.spawn("--protocol", "cleanup")
    done = builders.cli("builders", "list")
    assert done.returncode == 0
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in done.stdout.splitlines()]
    assert [row[:4] for row in rows if row and row[0]] == [
        [kind, builder["id"], "running", builder["branch"]]
        for kind, builder in (("task", task), ("protocol", protocol), ("shell", shell))
    ]


def test_a_finished_builder_is_recorded_then_pruned(builders: Builders):
    builder = builders.spawn("Fix bug")
    ended = end(builders, builder)
    assert ended["status"] == "succeeded"
    row = builders.row(builder["session_id"])
    assert row["completed_at"] is not None and row["duration_ms"] > 0
    assert "PROMPT<<Fix bug>>" in row["output"]  # the last screen is the output
    assert row["metadata"]["exit_status"] == 0

    done = builders.cli("builders", "prune")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (f"{builder['id']}: tmux killed, worktree removed, branch deleted\n")
    assert not Path(builder["worktree"]).exists()
    assert builders.git("branch", "--list", builder["branch"]) == ""
    assert screen(builders.socket, builder["tmux_session"]) == ""
    assert builders.row(builder["session_id"])["metadata"]["pruned_at"]
    assert builder["id"] not in listed(builders)
    assert listed(builders, "--all")[builder["id"]]["pruned"] is True
    assert (
        builders.cli("builders", "prune").stdout
        == "nothing to prune: no finished builder is left\n"
    )


def test_prune_keeps_unmerged_and_uncommitted_work_unless_forced(builders: Builders):
    committed = builders.spawn("Add a file")
    dirty = builders.spawn("Leave a mess")
    running = builders.spawn("Keep going")
    worktree = Path(committed["worktree"])
    (worktree / "new.txt").write_text("work\n")
    builders.git("-C", str(worktree), "add", "new.txt")
    builders.git("-C", str(worktree), "-c", "user.name=t", "-c", "user.email=t@t",
                 "commit", "-qm", "work")  # fmt: skip
    (Path(dirty["worktree"]) / "scratch.txt").write_text("unsaved\n")
    end(builders, committed)
    end(builders, dirty)

    report = {
        line.split(": ", 1)[0]: line
        for line in builders.cli("builders", "prune").stdout.splitlines()
    }
    assert "branch kept: not merged into HEAD" in report[committed["id"]]
    assert "worktree removed" in report[committed["id"]]
    assert "worktree kept: uncommitted changes" in report[dirty["id"]]
    assert running["id"] not in report
    assert (Path(dirty["worktree"]) / "scratch.txt").exists()
    assert builders.git("branch", "--list", committed["branch"]).strip()

    forced = builders.cli("builders", "prune", "--force").stdout
    assert f"{committed['id']}: tmux gone, worktree gone, branch deleted" in forced
    assert f"{dirty['id']}: tmux gone, worktree removed, branch deleted" in forced
    assert not Path(dirty["worktree"]).exists()
    branches = builders.git("for-each-ref", "--format=%(refname:short)", "refs/heads/builder/")
    assert branches.split() == [running["branch"]]
    assert listed(builders)[running["id"]]["status"] == "running"


def test_a_runtime_that_fails_fails_its_session(builders: Builders):
    builder = builders.spawn("Fix bug")
    ended = end(builders, builder, "fail")
    assert ended["status"] == "failed"
    assert ended["error"] == "runtime exited with status 3"


def test_a_builders_end_is_recorded_without_anyone_reading_it(builders: Builders):
    builder = builders.spawn("Fix bug")
    builders.wait_screen(builder, "agent> ")
    tmux(builders.socket, "send-keys", "-t", f"={builder['tmux_session']}:", "exit", "Enter")
    # Only the database is read: no listing, no dashboard, nothing that asks the daemon.
    row = wait_until(
        lambda: (r := builders.row(builder["session_id"]))["status"] != "running" and r
    )
    assert row["status"] == "succeeded" and row["completed_at"] is not None
    assert row["metadata"]["exit_status"] == 0 and "agent> " in row["output"]


def test_attach_joins_the_builders_terminal(builders: Builders):
    builder = builders.spawn("Fix bug")
    builders.wait_screen(builder, "agent> ")
    argv = [
        sys.executable,
        "-m",
        "butler.cli",
        "builders",
        "attach",
        builder["id"],
        "-c",
        str(builders.folder),
    ]
    viewer = f"{builders.socket}v"  # a second tmux server plays the person's terminal
    try:
        subprocess.run(
            ["tmux", "-L", viewer, "new-session", "-d", "-s", "person", "-x", "200", "-y", "50",
             "--", *argv],
            env=builders.env(), cwd=builders.repo, check=True,
        )  # fmt: skip
        wait_until(lambda: "PROMPT<<Fix bug>>" in screen(viewer, "person"), timeout=30)
        tmux(viewer, "send-keys", "-t", "=person:", "hello", "Enter")
        builders.wait_screen(builder, "you said: hello")
    finally:
        kill_tmux_server(viewer)


def test_headless_runs_the_builder_to_completion(builders: Builders):
    done = builders.cli("builders", "spawn", "Fix bug", "--headless")
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["prompt"].endswith("\n\nFix bug")
    assert "ROLE: builder" in seen["prompt"] and "Your git worktree is" in seen["prompt"]
    assert "succeeded; branch builder/task-" in done.stderr
    (builder,) = listed(builders).values()
    assert builder["headless"] is True and builder["status"] == "succeeded"
    assert Path(builder["worktree"]).is_dir() and builder["tmux_session"] is None
    row = builders.row(builder["session_id"])
    assert row["type"] == "task" and row["output"] == done.stdout.strip()
    attach = builders.cli("builders", "attach", builder["id"])
    assert attach.returncode == 2 and "ran headless; it has no terminal" in attach.stderr


def test_builders_outlive_a_daemon_restart(builders: Builders):
    builder = builders.spawn("Fix bug")
    builders.wait_screen(builder, "agent> ")
    builders.daemon.stop()
    builders.daemon.start()
    assert listed(builders)[builder["id"]]["status"] == "running"
    assert end(builders, builder)["status"] == "succeeded"


def test_concurrent_spawns_get_distinct_builders(builders: Builders):
    argv = [
        sys.executable,
        "-m",
        "butler.cli",
        "builders",
        "spawn",
        "--json",
        "-c",
        str(builders.folder),
    ]
    spawns = [["Fix bug"], ["Fix bug"], ["--protocol", "cleanup"], ["--protocol", "cleanup"]]
    procs = [
        subprocess.Popen(
            [*argv, *args], cwd=builders.repo, env=builders.env(), stdout=subprocess.PIPE, text=True
        )
        for args in spawns
    ]
    started = [json.loads(proc.communicate(timeout=120)[0]) for proc in procs]
    assert all(proc.returncode == 0 for proc in procs)
    ids = {b["id"] for b in started}
    assert len(ids) == 4 and len({b["tmux_session"] for b in started}) == 4
    for builder in started:
        builders.wait_screen(builder, "agent> ")
    assert set(listed(builders)) == ids
