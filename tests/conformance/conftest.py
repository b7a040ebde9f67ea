"""One real, jailed ``butler run`` daemon per runtime, shared by that runtime's cases.

Every session runs as a butler's owner would run it: inside the jail
(bubblewrap, the seccomp filter, the egress proxy), its ``cli_path`` the
genuine CLI. The jail refuses ``ptrace``, so ``strace`` watches from outside:
the daemon finds a ``bwrap`` on its ``PATH`` that runs the real one under
``strace -f`` (only ``connect`` calls, one log per run), so every case also
records where anything in the jail tried to connect.
"""

from __future__ import annotations

import asyncio
import os
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
from tests.fakes.mcp_probe import McpProbe
from tests.fakes.model_server import FakeModelServer
from tests.helpers import (
    DaemonProcess,
    free_port,
    missing_tool,
    require_cli,
    require_jail,
    write_butler,
)

STRACE = shutil.which("strace")


@dataclass
class Conformance:
    """A running butler on one runtime, and where to look at what its sessions did."""

    name: str
    case: RuntimeCase
    daemon: DaemonProcess
    data_dir: Path
    folder: Path
    connect_logs: Path
    #: An MCP server the jail lets through, planted in configs the runtime must not read.
    decoy: McpProbe

    @property
    def url(self) -> str:
        return self.daemon.url

    @property
    def home_seed(self) -> Path:
        """The home every session's private home is copied from."""
        return self.data_dir / "butlers" / BUTLER / "home"

    def session_home(self, session_id: str) -> Path:
        return self.data_dir / "butlers" / BUTLER / "homes" / session_id


def write_traced_bwrap(folder: Path, logs: Path) -> Path:
    """A folder whose ``bwrap`` runs the real one, and all it starts, under strace."""
    bwrap = shutil.which("bwrap")
    if bwrap is None or STRACE is None:
        missing_tool("bwrap" if bwrap is None else "strace")
    logs.mkdir(parents=True, exist_ok=True)
    trace = f'{STRACE} -f -qq --seccomp-bpf -e trace=connect -o "{logs}/connect.$$.log"'
    shim = folder / "bin" / "bwrap"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec {trace} -- "{bwrap}" "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    return shim.parent


def _env_toml(names: list[str]) -> str:
    return "\n[butler.env]\noptional = [" + ", ".join(f'"{n}"' for n in names) + "]\n"


def _sandbox_toml(allow: list[str]) -> str:
    return "\n[butler.sandbox]\nallow_hosts = [" + ", ".join(f'"{h}"' for h in allow) + "]\n"


def _drop_schema(name: str) -> None:
    async def drop() -> None:
        conn = await asyncpg.connect(TEST_DSN)
        try:
            await conn.execute(f"DROP SCHEMA IF EXISTS {quote_ident(name)} CASCADE")
        finally:
            await conn.close()

    asyncio.run(drop())


@pytest.fixture(scope="package")
def decoy() -> Iterator[McpProbe]:
    """A decoy MCP server for the whole suite (its calls are cleared by the case using it)."""
    with McpProbe("decoy") as probe:
        yield probe


@pytest.fixture(scope="package", params=sorted(CASES))
def conformance(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    _fake_model_session: FakeModelServer,
    decoy: McpProbe,
) -> Iterator[Conformance]:
    """A jailed daemon of butler ``conformer`` on the genuine CLI of one runtime.

    The jail lets the decoy MCP server through, so a runtime that read a
    config it must not read would reach it, as it would unjailed.
    """
    name: str = request.param
    case = CASES[name]
    require_cli(case.recipe.missing_reason())
    require_jail()
    root = tmp_path_factory.mktemp(f"conformance-{name}")
    logs = root / "connect"
    traced = write_traced_bwrap(root, logs)
    model_url = _fake_model_session.url
    runtime = {"type": case.type, "cli_path": str(case.binary)}
    if case.model:
        runtime["model"] = case.model
    if case.args(model_url):
        runtime["args"] = case.args(model_url)
    values = case.env(model_url)
    schema = f"t_{uuid.uuid4().hex[:12]}"
    port = free_port()
    roster = root / "roster"
    (roster / "shared").mkdir(parents=True)
    decoy_port = decoy.url.split(":")[-1].split("/")[0]
    extra = _env_toml(sorted(values)) + _sandbox_toml([f"127.0.0.1:{decoy_port}"])
    folder = write_butler(roster, BUTLER, port=port, schema=schema, runtime=runtime, extra=extra)
    for relative, text in case.files.items():
        (folder / relative).write_text(text, encoding="utf-8")
    data = root / "data"
    env = {**values, "BUTLER_DATA_DIR": str(data), "BUTLER_CANARY_SECRET": "must-not-leak"}
    env["BUTLER_SANDBOX"] = "bwrap"
    env["PATH"] = f"{traced}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    daemon = DaemonProcess(folder, port=port, database_url=TEST_DSN, env=env)
    try:
        with daemon:
            yield Conformance(name, case, daemon, data, folder, logs, decoy)
    finally:
        _drop_schema(schema)
