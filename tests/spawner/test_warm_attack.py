"""Attacks on the warm jails (sandbox/pool.py, the bridge's bridge_attach.c and
bridge_warm.c): each test is a way a session could fail, or see what is not its own,
because of the pool.

The runtime is the no-op Claude CLI of tests/spawner/probe_cli.py.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest

from butler.paths import butler_dir
from butler.sandbox import pool as pool_module
from butler.sandbox.pool import HOME_PREFIX
from butler.spawner.spawner import TriggerRequest
from tests.spawner.warm import spawner, until_warm, warm_jails_asked_for

pytestmark = pytest.mark.slow

__all__ = ["spawner", "warm_jails_asked_for"]


async def test_a_session_handed_to_a_warm_jail_whose_start_then_fails_runs_in_a_jail_of_its_own(
    spawner, monkeypatch, tmp_path
):
    # bubblewrap is still setting a warm jail up when a session takes it (the pool's own
    # socket already listens, so the session's handover is queued), then fails (a bound
    # path vanished, an OOM kill): nothing of the session ran, so its own jail must run it.
    failing = tmp_path / "bwrap-that-fails"
    failing.write_text("#!/bin/sh\nsleep 1\necho 'bwrap: Can't find source path' >&2\nexit 1\n")
    failing.chmod(0o755)
    start_bridge = pool_module._start_bridge

    async def slow_then_failing(jail, *args):
        warm = await start_bridge(replace(jail, bwrap=str(failing)), *args)
        warm.jail = jail  # the session's own jail, should it need one, is a real one
        return warm

    try:
        first = await spawner.trigger(TriggerRequest("first"))
        assert first.success, first.error
        await until_warm(spawner)
        for warm in list(spawner._pool._ready):
            await warm.stop()  # the real ones go; the next ones fail to start
            spawner._pool._ready.remove(warm)
        monkeypatch.setattr(pool_module, "_start_bridge", slow_then_failing)
        spawner._pool._fill()
        await until_warm(spawner)
        taken = spawner._pool.taken
        result = await spawner.trigger(TriggerRequest("after"))
        assert spawner._pool.taken == taken + 1
        assert result.success, result.error
        seen = json.loads((spawner.config.config_dir / "probe-after.json").read_text())
        assert seen["env"]["ANTHROPIC_API_KEY"] == "sk-test"
    finally:
        await spawner.drain(5)


async def test_warm_homes_left_by_a_daemon_of_the_same_pid_are_swept(spawner):
    # A container's daemon has the same pid after each restart (its init starts it first):
    # the warm homes of the one killed before must go, those of the live pool stay.
    homes = butler_dir(spawner.config) / "homes"
    homes.mkdir(parents=True, exist_ok=True)
    left = [
        homes / f"{HOME_PREFIX}{os.getpid()}-left",
        homes / f"{HOME_PREFIX}{os.getpid()}.1-left",
    ]
    for folder in left:
        folder.mkdir()
        (folder / ".claude.json").write_text("{}")
    try:
        first = await spawner.trigger(TriggerRequest("first"))
        assert first.success, first.error
        await until_warm(spawner)
        live = [w.home for w in spawner._pool._ready]
        spawner.sweep()
        assert [f for f in left if f.exists()] == []
        assert all(home.is_dir() for home in live)
        taken = spawner._pool.taken
        second = await spawner.trigger(TriggerRequest("second"))
        assert second.success, second.error
        assert spawner._pool.taken == taken + 1
    finally:
        await spawner.drain(5)
