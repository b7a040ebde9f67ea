"""One real ``butler run`` daemon per runtime, shared by that runtime's conformance cases.

The butler's ``cli_path`` is a wrapper that runs the genuine CLI under
``strace`` (only ``connect`` calls, one log per run), so every case also
records where the runtime tried to connect.
"""

from __future__ import annotations

import asyncio
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest

from butler.store.db import quote_ident
from tests.conformance.runtimes import BUTLER, CASES, RuntimeCase
from tests.conftest import TEST_DSN
from tests.fakes.model_server import FakeModelServer
from tests.helpers import SETUP, DaemonProcess, free_port, write_butler

STRACE = shutil.which("strace")


@dataclass
class Conformance:
    """A running butler on one runtime, and where to look at what its sessions did."""

    name: str
    case: RuntimeCase
    daemon: DaemonProcess
    data_dir: Path
    folder: Path
    connect_logs: Path | None

    @property
    def url(self) -> str:
        return self.daemon.url

    @property
    def home_seed(self) -> Path:
        """The home every session's private home is copied from."""
        return self.data_dir / "butlers" / BUTLER / "home"

    def session_home(self, session_id: str) -> Path:
        return self.data_dir / "butlers" / BUTLER / "homes" / session_id


def write_cli_wrapper(folder: Path, binary: Path, logs: Path | None) -> Path:
    """An executable that runs ``binary``, under strace when there is one."""
    wrapper = folder / "cli"
    if logs is None:
        line = f'exec "{binary}" "$@"'
    else:
        logs.mkdir(parents=True, exist_ok=True)
        trace = f'{STRACE} -f -qq --seccomp-bpf -e trace=connect -o "{logs}/connect.$$.log"'
        line = f'exec {trace} -- "{binary}" "$@"'
    wrapper.write_text(f"#!/bin/sh\n{line}\n", encoding="utf-8")
    wrapper.chmod(0o755)
    return wrapper


def _env_toml(names: list[str]) -> str:
    return "\n[butler.env]\noptional = [" + ", ".join(f'"{n}"' for n in names) + "]\n"


def _drop_schema(name: str) -> None:
    async def drop() -> None:
        conn = await asyncpg.connect(TEST_DSN)
        try:
            await conn.execute(f"DROP SCHEMA IF EXISTS {quote_ident(name)} CASCADE")
        finally:
            await conn.close()

    asyncio.run(drop())


@pytest.fixture(scope="module", params=sorted(CASES))
def conformance(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    _fake_model_session: FakeModelServer,
) -> Iterator[Conformance]:
    """A daemon of butler ``conformer`` on the genuine CLI of one runtime."""
    name: str = request.param
    case = CASES[name]
    missing = case.recipe.missing_reason()
    if missing:
        pytest.fail(f"{missing} (or run {SETUP})", False)
    root = tmp_path_factory.mktemp(f"conformance-{name}")
    logs = root / "connect" if STRACE else None
    model_url = _fake_model_session.url
    runtime = {"type": case.type, "cli_path": str(write_cli_wrapper(root, case.binary, logs))}
    if case.model:
        runtime["model"] = case.model
    if case.args(model_url):
        runtime["args"] = case.args(model_url)
    values = case.env(model_url)
    schema = f"t_{uuid.uuid4().hex[:12]}"
    port = free_port()
    roster = root / "roster"
    (roster / "shared").mkdir(parents=True)
    folder = write_butler(
        roster, BUTLER, port=port, schema=schema, runtime=runtime, extra=_env_toml(sorted(values))
    )
    for relative, text in case.files.items():
        (folder / relative).write_text(text, encoding="utf-8")
    data = root / "data"
    env = {**values, "BUTLER_DATA_DIR": str(data), "BUTLER_CANARY_SECRET": "must-not-leak"}
    daemon = DaemonProcess(folder, port=port, database_url=TEST_DSN, env=env)
    try:
        with daemon:
            yield Conformance(name, case, daemon, data, folder, logs)
    finally:
        _drop_schema(schema)
