"""The unit tier: pure logic, no database and no process.

The suite's database fixtures fail here, so a test that needs PostgreSQL says
so at once and goes to the integration tier instead.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def pg_dsn() -> str:
    pytest.fail("a unit test needs no database: move it out of tests/unit", False)


@pytest.fixture
def db() -> None:
    pytest.fail("a unit test needs no database: move it out of tests/unit", False)
