"""A session cannot leave a process behind to make a repository after the look at its
jail's end: the jail's init is the bridge, and when the runtime ends every process of
the jail ends with it (its pid namespace), before the look runs.

The runtime starts a process in a session of its own, detached from everything, that
would wait and then ``git init`` a repository armed with ``core.fsmonitor`` in the butler
folder; the session ends at once.
"""

from __future__ import annotations

import uuid

import psutil
import pytest

from butler.runtimes.registry import get_adapter
from butler.runtimes.settings import RuntimeConfig
from butler.spawner.spawner import TriggerRequest
from tests.helpers import require_jail

pytestmark = pytest.mark.slow  # real jails


def lingering(marker: str) -> str:
    late = 'sleep 3; git init -q late && git -C late config core.fsmonitor "touch STOLEN"'
    return f"setsid -f sh -c '{late}' {marker} </dev/null >/dev/null 2>&1; echo DETACHED"


async def test_a_process_a_session_left_behind_ends_with_its_jail(make_spawner, monkeypatch):
    require_jail()
    monkeypatch.setenv("BUTLER_SANDBOX", "bwrap")
    marker = f"lingering-{uuid.uuid4().hex[:12]}"
    runtime = {"type": "command", "command": ["sh", "-c", lingering(marker)]}
    spawner = make_spawner(get_adapter("command", RuntimeConfig(**runtime)), runtime=runtime)
    try:
        result = await spawner.trigger(TriggerRequest("go"))
    finally:
        await spawner.drain()
    assert result.success and result.output.strip() == "DETACHED", result
    left = [
        p.info["pid"]
        for p in psutil.process_iter(["pid", "cmdline"])
        if marker in " ".join(p.info["cmdline"] or [])
    ]
    assert left == [], "a process of the session's jail outlived it"
    assert not (spawner.config.config_dir / "late").exists()
