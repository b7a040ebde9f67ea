"""Fixtures for driving genuine CLIs against the fake model server.

A pytest plugin, not a conftest: the top-level conftest loads it with
`pytest_plugins = ["tests.fakes.fixtures"]` so every test package shares
these fixtures. (Listing a conftest.py there makes pytest register the same
module twice and abort collection.)
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.mcp_probe import McpProbe
from tests.fakes.model_server import FakeModelServer


@pytest.fixture(scope="session")
def _fake_model_session() -> Iterator[FakeModelServer]:
    with FakeModelServer() as server:
        yield server


@pytest.fixture
def fake_model(_fake_model_session: FakeModelServer) -> FakeModelServer:
    """The session's fake model server, reset to `[Text("ok")]` with no requests."""
    _fake_model_session.reset()
    return _fake_model_session


@pytest.fixture
def mcp_probe() -> Iterator[McpProbe]:
    """A fresh MCP server with a recording `state_set` tool."""
    with McpProbe() as probe:
        yield probe


@pytest.fixture(scope="session")
def cli_cache() -> Iterator[Path]:
    """A cache shared by the session's CLI runs, deleted at the end.

    Copilot unpacks ~235 MB into its cache on first start; sharing it keeps
    that to once per session without touching the real home.
    """
    with tempfile.TemporaryDirectory(prefix="butler-cli-cache-") as path:
        yield Path(path)
