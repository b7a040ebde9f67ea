"""Helpers for tests: butler folders on disk and butler daemons as real processes."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
#: The owner token of every butler a test starts (tests/conftest.py sets BUTLER_TOKEN to it).
TEST_TOKEN = "test-owner-token-0123456789-abcdefghijklmnop"

#: Environment variables that override a butler folder's files (a test of the files unsets them).
CONFIG_OVERRIDES = (
    "DATABASE_URL",
    "BUTLER_PORT",
    "BUTLER_HOST",
    "BUTLER_DB_SCHEMA",
    "BUTLER_RUNTIME",
)


def butler_client(url: str, **kwargs: Any) -> Any:
    """An MCP client on a butler's ``/mcp`` or ``/sse``, presenting the owner token (or the
    ``auth`` given)."""
    from fastmcp import Client

    return Client(url, **{"auth": TEST_TOKEN, **kwargs})


#: The one script that installs everything the suite needs; every missing tool names it.
SETUP = "scripts/setup-dev"


def missing_tool(what: str) -> None:
    """Fail the test: CI must run it, so a missing tool is never a silent skip."""
    pytest.fail(f"{what} is not installed: run {SETUP} (it installs what the tests need)", False)


def require_tool(name: str) -> str:
    """The path of system tool ``name``; the test fails naming the set-up script without it."""
    found = shutil.which(name)
    if found is None:
        missing_tool(name)
    return str(found)


def require_cli(missing: str | None) -> None:
    """Fail the test when a genuine agent CLI is missing (``missing`` says which, and why)."""
    if missing:
        pytest.fail(f"{missing} (or run {SETUP})", False)


def require_jail() -> None:
    """Fail the test unless the runtime jail starts on this machine.

    The suite proves the jail; a machine that cannot run it fails those proofs
    rather than passing without them.
    """
    from butler.sandbox import probe

    reason = probe()
    if reason is not None:
        pytest.fail(
            f"the runtime jail cannot start here: {reason.rstrip('.')}. Run {SETUP}; with "
            "bubblewrap installed, the machine must also allow unprivileged user namespaces",
            False,
        )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write_butler(
    roster: Path,
    name: str,
    *,
    port: int,
    schema: str | None = None,
    runtime: dict[str, Any] | None = None,
    extra: str = "",
    prompt: str = "You are a test butler. Do what you are asked.\n",
) -> Path:
    """Write ``roster/<name>/`` with a butler.toml and CLAUDE.md; return the folder."""
    folder = roster / name
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["[butler]", f'name = "{name}"', f"port = {port}", ""]
    if schema:
        lines += ["[butler.db]", f'schema = "{schema}"', ""]
    if runtime:
        lines.append("[butler.runtime]")
        for key, value in runtime.items():
            lines.append(f"{key} = {json.dumps(value)}")
        lines.append("")
    (folder / "butler.toml").write_text("\n".join(lines) + extra, encoding="utf-8")
    (folder / "CLAUDE.md").write_text(prompt, encoding="utf-8")
    return folder


def butler_toml(roster: Path, body: str, name: str = "tester") -> Path:
    """A butler folder whose butler.toml is exactly ``body`` (beside a CLAUDE.md)."""
    folder = write_butler(roster, name, port=8100)
    (folder / "butler.toml").write_text(body, encoding="utf-8")
    return folder


def spawner_over(config: Any, db: Any, **parts: Any) -> Any:
    """The butler's spawner as its daemon assembles it (``Execution.over``), with
    ``parts`` in place of its own: a fake adapter, credentials from a given
    environment, a store that fails on cue."""
    import dataclasses

    from butler.spawner.execution import Execution
    from butler.spawner.spawner import Spawner

    return Spawner(dataclasses.replace(Execution.over(config, db), **parts))


def wait_until(predicate: Any, timeout: float = 30.0, interval: float = 0.05) -> Any:
    """Poll ``predicate`` until it returns a truthy value or the deadline passes."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"condition not met within {timeout} s")
        time.sleep(interval)


async def eventually(predicate: Any, timeout: float = 30.0, interval: float = 0.02) -> Any:
    """:func:`wait_until` inside a test's event loop; ``predicate`` may be sync or async."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if loop.time() > deadline:
            raise TimeoutError(f"condition not met within {timeout} s")
        await asyncio.sleep(interval)


def get_json(
    url: str, timeout: float = 2.0, token: str | None = TEST_TOKEN
) -> tuple[int, dict[str, Any]]:
    """GET a JSON route of a butler, with the owner token unless ``token`` is None."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        request = urllib.request.Request(url, headers=headers)
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


class DaemonProcess:
    """``butler run`` as a real subprocess, stopped with SIGTERM."""

    def __init__(
        self,
        config_dir: Path,
        *,
        port: int,
        database_url: str | None,
        env: dict[str, str] | None = None,
        log_path: Path | None = None,
        token: str | None = TEST_TOKEN,
    ) -> None:
        """``token`` becomes ``BUTLER_TOKEN``; None leaves the daemon to its token file."""
        self.config_dir = config_dir
        self.port = port
        self.database_url = database_url
        self.env = {**os.environ, **(env or {})}
        # The suite's and the benchmarks' machines run them as root, on purpose.
        self.env.setdefault("BUTLER_ALLOW_ROOT", "1")
        if token is None:
            self.env.pop("BUTLER_TOKEN", None)
        else:
            self.env["BUTLER_TOKEN"] = token
        self.log_path = log_path or config_dir / "daemon.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def argv(self) -> list[str]:
        argv = [sys.executable, "-m", "butler.cli", "run", "--config", str(self.config_dir)]
        argv += ["--port", str(self.port)]
        if self.database_url:
            argv += ["--database-url", self.database_url]
        return argv

    def start(self, timeout: float = 60.0) -> DaemonProcess:
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            self.argv(), stdout=log, stderr=subprocess.STDOUT, env=self.env, cwd=REPO
        )
        log.close()

        def healthy() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"daemon exited early:\n{self.logs()}")
            try:
                status, _ = get_json(f"{self.url}/health", timeout=1)
            except OSError:
                return False
            return status == 200

        wait_until(healthy, timeout=timeout)
        return self

    def logs(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def stop(self, timeout: float = 30.0) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def __enter__(self) -> DaemonProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class InProcessButler:
    """A whole butler served by uvicorn inside the test's event loop.

    For what a subprocess hides from a test: its in-memory spans and metrics.
    """

    def __init__(self, config_dir: Path, *, database_url: str) -> None:
        self.config_dir = config_dir
        self.database_url = database_url

    async def __aenter__(self) -> InProcessButler:
        import uvicorn

        from butler.config import load_config
        from butler.daemon import assemble
        from butler.server import build_app
        from butler.store.opening import open_store

        self.config = load_config(self.config_dir, db_url=self.database_url)
        self.opened = await open_store(self.config.essentials())
        self.butler = await assemble(self.config, self.opened.db)
        server_config = uvicorn.Config(
            build_app(self.butler),
            host="127.0.0.1",
            port=self.config.butler.port,
            log_config=None,
            lifespan="on",
        )
        self.server = uvicorn.Server(server_config)
        self.task = asyncio.create_task(self.server.serve())
        while not self.server.started:
            if self.task.done():
                self.task.result()
            await asyncio.sleep(0.02)
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.config.butler.port}"

    async def __aexit__(self, *exc: object) -> None:
        await self.butler.spawner.drain(5)
        self.server.should_exit = True
        await self.task
        await self.opened.close()
