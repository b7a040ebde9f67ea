"""Tool tests: a butler's MCP server over a real database and an in-process fake runtime."""

import pytest

from butler.context import ButlerContext
from butler.server import build_mcp
from butler.store.state import StateStore
from tests.fakes.runtime import FakeAdapter


@pytest.fixture
def butler_mcp(make_spawner, db):
    def build(adapter=None):
        spawner = make_spawner(adapter or FakeAdapter())
        context = ButlerContext(
            config=spawner.config,
            db=db,
            state=StateStore(db),
            sessions=spawner.sessions,
            spawner=spawner,
        )
        return build_mcp(context)

    return build
