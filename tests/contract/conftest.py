"""Contract tests share the spawner fixtures and a roster holding the example adapter."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

EXAMPLE_ROSTER = Path(__file__).resolve().parents[2] / "roster"


@pytest.fixture
def adapter_roster(roster: Path) -> Path:
    """A roster with the shipped example external runtime registered."""
    shutil.copytree(EXAMPLE_ROSTER / "adapters", roster / "adapters")
    shutil.copy(EXAMPLE_ROSTER / "agent_runtime.json", roster / "agent_runtime.json")
    return roster
