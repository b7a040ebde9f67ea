"""What the warm-jail tests share: jailed sessions with a pool of two asked for, a spawner
whose runtime is the probe CLI (tests/spawner/probe_cli.py), and a wait for the pool."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from butler.config import RuntimeConfig
from butler.runtimes.registry import get_adapter
from tests.helpers import require_jail

PROBE = Path(__file__).with_name("probe_cli.py")


@pytest.fixture(autouse=True)
def warm_jails_asked_for(monkeypatch) -> None:
    require_jail()
    monkeypatch.setenv("BUTLER_SANDBOX", "bwrap")
    monkeypatch.setenv("BUTLER_JAIL_POOL", "2")  # warm jails are asked for (off by default)


@pytest.fixture
def spawner(make_spawner):
    adapter = get_adapter("claude-code", RuntimeConfig(cli_path=str(PROBE)))
    return make_spawner(adapter, runtime={"cli_path": str(PROBE), "max_concurrent_sessions": 4})


async def until_warm(spawner, count: int = 2) -> None:
    """Wait until the pool holds ``count`` warm jails (they are made in the background)."""
    for _ in range(200):
        if spawner._pool.ready >= count:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the pool holds {spawner._pool.ready} warm jails, expected {count}")
