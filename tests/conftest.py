"""Shared fixtures: a real PostgreSQL, throwaway butler folders, daemon processes."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from butler.config import load_config
from butler.runtimes.base import RuntimeAdapter
from butler.spawner.spawner import Spawner
from butler.store.credentials import CredentialStore
from butler.store.db import Database, quote_ident
from butler.store.memory import Memory, PostgresMemory
from butler.store.migrations import migrate
from butler.store.sessions import SessionStore
from tests.database import SUITE, name_run_folder
from tests.fakes.runtime import FakeAdapter
from tests.helpers import TEST_TOKEN, free_port, spawner_over, write_butler

#: The fake model server and MCP probe fixtures serve every test package, and so do the
#: real servers tests run (a Matrix homeserver, a mail server, an MQTT subscriber, a webhook);
#: tests/tiers.py marks the tiers and runs the fast ones first.
pytest_plugins = ["tests.fakes.fixtures", "tests.servers.fixtures", "tests.tiers"]

#: Suites that are not about the jail run their fakes (which live in this repository,
#: outside any jail) unjailed; tests/sandbox turns it on for every runtime it starts.
os.environ.setdefault("BUTLER_SANDBOX", "none")
#: The suite runs as root on its machines; the daemons it starts are told that is meant
#: (tests/test_root.py proves the refusal without it).
os.environ.setdefault("BUTLER_ALLOW_ROOT", "1")

#: A suite started in the background by a shell without job control (``cmd &``) has
#: SIGINT ignored, and every process it starts inherits that: the tests that stop a
#: daemon or an ask with Ctrl-C would wait for ever. Handled here, it is the default
#: again in what this process starts (an exec resets handled signals, not ignored ones).
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

#: The embedded server's folder, if a test of this run needs one, named before xdist starts workers.
name_run_folder()


def __getattr__(name: str) -> str:
    """``TEST_DSN``, for the modules that import it: the server is found on that import.

    Lazy so that a run that never imports it nor asks for ``pg_dsn`` (the unit
    tier) never looks for a database.
    """
    if name == "TEST_DSN":
        return SUITE.dsn()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Let go of the embedded PostgreSQL once every test (and every xdist worker) is done."""
    SUITE.close()
    SUITE.remove_run_folder()


@pytest.fixture(scope="session")
def pg_dsn() -> str:
    """The suite's PostgreSQL, found or started by the first test that asks for it."""
    return SUITE.dsn()


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Every test gets its own butler data folder, never the user's."""
    data = tmp_path_factory.mktemp("butler-data")
    monkeypatch.setenv("BUTLER_DATA_DIR", str(data))
    # Every butler a test starts, and every command it runs, shares one known owner token.
    monkeypatch.setenv("BUTLER_TOKEN", TEST_TOKEN)
    return data


@pytest.fixture
def schema_name() -> Iterator[str]:
    """A fresh schema name, dropped with everything in it after the test."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    yield name
    drop_schemas(name)


def drop_schemas(*names: str) -> None:
    """Drop ``names`` with everything in them, if the run has a database at all."""
    if not SUITE.opened:  # nothing asked for the database: no schema can exist
        return
    import asyncio

    async def drop() -> None:
        conn = await asyncpg.connect(SUITE.dsn())
        try:
            for name in names:
                await conn.execute(f"DROP SCHEMA IF EXISTS {quote_ident(name)} CASCADE")
        finally:
            await conn.close()

    asyncio.run(drop())


@pytest.fixture
def schemas() -> Iterator[list[str]]:
    """Four schema names, for a roster's butlers, dropped after the test."""
    prefix = f"t_{uuid.uuid4().hex[:8]}"
    names = [f"{prefix}_{i}" for i in range(4)]
    yield names
    drop_schemas(*names)


@pytest.fixture
async def db(schema_name: str) -> AsyncIterator[Database]:
    """A migrated database in a schema of its own."""
    database = Database(SUITE.dsn(), schema_name)
    await database.connect()
    await migrate(database)
    try:
        yield database
    finally:
        await database.close()


@pytest.fixture
def roster(tmp_path: Path) -> Path:
    """An empty roster folder with the shared snippets folder."""
    root = tmp_path / "roster"
    (root / "shared").mkdir(parents=True)
    return root


@pytest.fixture
def butler_dir(roster: Path, schema_name: str) -> Path:
    """A minimal butler folder in its own schema, on a free port."""
    return write_butler(roster, "tester", port=free_port(), schema=schema_name)


@pytest.fixture(scope="session")
def _telemetry_memory():
    """Every span and metric this test process records, in memory (one provider per process)."""
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from butler.telemetry import setup_telemetry

    exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
    if setup_telemetry("butler-tests", SimpleSpanProcessor(exporter), reader) is None:
        pytest.fail(
            "a tracer provider was installed before this fixture: a test of this process "
            "called setup_telemetry; the spans and metrics tests cannot read theirs",
            False,
        )
    return exporter, reader


@pytest.fixture
def span_exporter(_telemetry_memory):
    return _telemetry_memory[0]


@pytest.fixture
def metric_reader(_telemetry_memory):
    return _telemetry_memory[1]


@pytest.fixture
def make_spawner(db, roster):
    """Build a Spawner over the test database with a fake or real adapter."""

    def build(
        adapter: RuntimeAdapter | None = None,
        *,
        runtime: dict[str, Any] | None = None,
        extra: str = "",
        prompt: str = "You are a test butler.\n",
        environ: dict[str, str] | None = None,
        memory: Memory | None = None,
    ) -> Spawner:
        folder = write_butler(
            roster,
            "tester",
            port=free_port(),
            schema=db.schema,
            runtime=runtime,
            extra=extra,
            prompt=prompt,
        )
        config = load_config(folder)
        return spawner_over(
            config,
            db,
            adapter=adapter or FakeAdapter(config.runtime),
            sessions=SessionStore(db),
            credentials=CredentialStore(db, environ or {"ANTHROPIC_API_KEY": "sk-test"}),
            memory=memory or PostgresMemory(db),
        )

    return build
