"""Warm jails: a session takes a jail made ahead of demand, and gets only what it would
have got from a jail of its own (its environment, its home, its proxy's allow-list);
no session sees another's files, and draining the butler leaves no jail behind.

The runtime is a no-op Claude CLI driven by the real SDK that records what it
finds in its jail (tests/spawner/probe_cli.py).
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import psutil
import pytest

from butler.paths import butler_dir
from butler.sandbox.pool import HOME_PREFIX, Warm
from butler.spawner.spawner import TriggerRequest
from tests.helpers import wait_until
from tests.spawner.warm import PROBE, spawner, until_warm, warm_jails_asked_for

pytestmark = pytest.mark.slow

__all__ = ["spawner", "warm_jails_asked_for"]


def _probe(spawner, name: str) -> dict:
    return json.loads((spawner.config.config_dir / f"probe-{name}.json").read_text())


async def test_a_session_in_a_warm_jail_sees_only_its_own_env_home_and_workspace(
    spawner, monkeypatch
):
    monkeypatch.setenv("BUTLER_CANARY_SECRET", "do-not-leak")
    try:
        first = await spawner.trigger(TriggerRequest("first"))
        assert first.success, first.error
        await until_warm(spawner)
        taken = spawner._pool.taken
        second = await spawner.trigger(TriggerRequest("second"))
        assert second.success, second.error
        assert spawner._pool.taken == taken + 1  # it ran in a warm jail
        cold, warm = _probe(spawner, "first"), _probe(spawner, "second")
        # Exactly the variables a jail of its own gives, with its own values.
        assert set(warm["env"]) - {"TRACEPARENT"} == set(cold["env"]) - {"TRACEPARENT"}
        assert "BUTLER_CANARY_SECRET" not in warm["env"]
        assert warm["env"]["ANTHROPIC_API_KEY"] == "sk-test"
        assert warm["env"]["HOME"] == cold["env"]["HOME"] == "/home/butler"
        assert warm["env"]["CLAUDE_CODE_ENTRYPOINT"].startswith("sdk")
        # Nothing of the first session's home or workspace; its home is its session's.
        assert not [n for n in warm["home"] + warm["workspace"] if n.startswith("left-by")]
        homes = butler_dir(spawner.config) / "homes"
        assert (homes / second.session_id / "left-by-second").read_text() == "secret of second"
        # The proxy refuses what it refuses in a jail of its own.
        assert warm["proxy"].startswith("HTTP/1.1 403") and cold["proxy"] == warm["proxy"]
    finally:
        await spawner.drain(5)


async def test_no_warm_jail_is_used_twice(spawner):
    try:
        await spawner.trigger(TriggerRequest("first"))
        await until_warm(spawner)
        seen = []
        for name in ("a", "b", "c", "d"):
            result = await spawner.trigger(TriggerRequest(name))
            assert result.success, result.error
            seen.append(_probe(spawner, name)["workdir"])
            await until_warm(spawner)
        assert spawner._pool.taken >= 3
        assert len(set(seen)) == len(seen)  # every session had a workspace of its own
        for name in ("a", "b", "c", "d"):
            assert not [n for n in _probe(spawner, name)["home"] if n.startswith("left-by")]
    finally:
        await spawner.drain(5)


async def test_draining_ends_every_warm_jail_and_removes_its_folders(spawner):
    await spawner.trigger(TriggerRequest("first"))
    await until_warm(spawner)
    warm = list(spawner._pool._ready)
    processes = [psutil.Process(w.process.pid) for w in warm]
    assert all(p.name() == "bwrap" and p.ppid() == os.getpid() for p in processes)
    folders = [w.attach.parent for w in warm] + [w.home for w in warm]
    assert all(f.is_dir() for f in folders)
    await spawner.drain(5)
    assert not [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not [f for f in folders if f.exists()]
    homes = butler_dir(spawner.config) / "homes"
    assert list(homes.glob(f"{HOME_PREFIX}*")) == []


async def test_a_hung_runtime_in_a_warm_jail_ends_at_its_time_limit(spawner):
    try:
        await spawner.trigger(TriggerRequest("first"))
        await until_warm(spawner)
        taken = spawner._pool.taken
        result = await spawner.trigger(TriggerRequest("hung MODE:hang", timeout_s=1.5))
        assert spawner._pool.taken == taken + 1
        assert result.success is False and result.error.endswith("timeout after 1.5 s")
        wait_until(lambda: not _probe_running(), timeout=10)
    finally:
        await spawner.drain(5)


def _probe_running() -> bool:
    return any(
        str(PROBE) in (p.info["cmdline"] or [])[:2] and p.info["status"] != "zombie"
        for p in psutil.process_iter(["cmdline", "status"])
    )


async def test_a_session_whose_warm_jail_ended_runs_in_a_jail_of_its_own(spawner):
    try:
        await spawner.trigger(TriggerRequest("first"))
        await until_warm(spawner)
        for warm in spawner._pool._ready:  # ended under the pool's feet (a crash, an OOM kill)
            warm.process.kill()
        result = await spawner.trigger(TriggerRequest("after"))
        assert result.success, result.error
        assert _probe(spawner, "after")["proxy"].startswith("HTTP/1.1 403")
    finally:
        await spawner.drain(5)


async def test_a_session_handed_to_a_warm_jail_that_ended_runs_in_a_jail_of_its_own(
    spawner, monkeypatch
):
    # The jail ends between the pool's look and the session's launch: the launch script
    # finds no bridge waiting and runs the session's own jail instead.
    try:
        await spawner.trigger(TriggerRequest("first"))
        await until_warm(spawner)
        for warm in spawner._pool._ready:
            warm.process.kill()  # its bridge ends with it, a moment later
            await warm.process.wait()
            wait_until(lambda w=warm: _refused(w.attach), timeout=10)
        monkeypatch.setattr(Warm, "alive", property(lambda self: True))
        taken = spawner._pool.taken
        result = await spawner.trigger(TriggerRequest("after"))
        assert spawner._pool.taken == taken + 1
        assert result.success, result.error
        assert _probe(spawner, "after")["env"]["ANTHROPIC_API_KEY"] == "sk-test"
    finally:
        await spawner.drain(5)


def _refused(path: Path) -> bool:
    """Whether nothing listens at ``path`` any more (a bridge that accepts ends unused)."""
    with socket.socket(socket.AF_UNIX) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return True
    return False
