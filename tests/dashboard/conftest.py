"""Dashboard fixtures: a butler daemon with sessions a test holds open, and real Chromium.

Chromium is Debian's (``scripts/setup-dev`` installs it), driven by Playwright's
Python package with ``executable_path``: nothing is downloaded.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from tests.builders import conftest as builder_fixtures
from tests.builders.conftest import COMMAND_RUNTIME, Builders, write_builder_butler
from tests.conftest import TEST_DSN
from tests.helpers import (
    REPO,
    TEST_TOKEN,
    DaemonProcess,
    butler_client,
    free_port,
    missing_tool,
    write_butler,
)

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
ARTIFACTS = REPO / "test-artifacts"
#: The builder tests' throwaway repository and private tmux server serve here too.
repo = builder_fixtures.repo
tmux_socket = builder_fixtures.tmux_socket
FIFO_AGENT = Path(__file__).with_name("fifo_agent.py")


@contextlib.contextmanager
def launched() -> Iterator[Any]:
    """A headless Chromium browser; the test fails naming the set-up script without it."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    if sync_playwright is None:
        missing_tool("playwright (the Python package)")
    if not CHROMIUM.exists():
        missing_tool(f"Chromium ({CHROMIUM})")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def chromium(dashboard: Any) -> Iterator[Any]:
    """Chromium for the builders' dashboard.

    Per test, and set up after the daemon: Playwright's sync API runs an event loop
    in this thread, which must be gone before fixtures that call ``asyncio.run``
    tear down.
    """
    with launched() as browser:
        yield browser


@pytest.fixture
def browser(seeded: Any) -> Iterator[Any]:
    """Chromium for the seeded butler (set up after it, for the same reason)."""
    with launched() as found:
        yield found


def logged_in(browser: Any, url: str, **options: Any) -> Any:
    """A new page that came in by the owner's login link, as printed at start-up."""
    page = browser.new_page(**options)
    page.goto(f"{url}/?token={TEST_TOKEN}")
    return page


@dataclass
class HeldTriggers:
    """Trigger sessions through a real MCP client, each held open until released."""

    url: str
    folder: Path
    threads: list[threading.Thread] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)

    def start(self, prompt: str, name: str) -> Path:
        """Trigger ``prompt``; the runtime waits on a FIFO named ``name`` (returned)."""
        fifo = self.folder / name
        os.mkfifo(fifo)

        async def call() -> None:
            async with butler_client(f"{self.url}/mcp", timeout=120) as client:
                full = f"{prompt}\nWAIT:{fifo}"
                result = await client.call_tool("trigger", {"prompt": full})
                self.results.append(result.structured_content)

        thread = threading.Thread(target=lambda: asyncio.run(call()), daemon=True)
        thread.start()
        self.threads.append(thread)
        return fifo

    @staticmethod
    def release(fifo: Path) -> None:
        with fifo.open("w") as writer:
            writer.write("go")

    def join(self) -> None:
        for thread in self.threads:
            thread.join(timeout=60)


@pytest.fixture
def dashboard(
    roster, schema_name, repo, tmux_socket, _isolated_data_dir, tmp_path
) -> Iterator[tuple[Builders, HeldTriggers]]:
    """A running daemon whose headless runtime waits on FIFOs and whose builders are live."""
    runtime = {
        **COMMAND_RUNTIME,
        "command": [sys.executable, str(FIFO_AGENT), "{prompt_file}"],
        "max_concurrent_sessions": 4,
    }
    port = free_port()
    folder = write_builder_butler(roster, schema_name, port, runtime=runtime)
    env = {"BUTLER_TMUX_SOCKET": tmux_socket, "BUTLER_DATA_DIR": str(_isolated_data_dir)}
    env["ANTHROPIC_API_KEY"] = "sk-test"
    with DaemonProcess(folder, port=port, database_url=TEST_DSN, env=env) as daemon:
        held = HeldTriggers(daemon.url, tmp_path)
        builders = Builders(daemon, folder, repo, tmux_socket, schema_name, _isolated_data_dir)
        try:
            yield builders, held
        finally:
            for fifo in tmp_path.glob("hold-*"):
                _release_quietly(fifo)
            held.join()


def _release_quietly(fifo: Path) -> None:
    """Free a runtime still waiting, so the daemon can stop (O_NONBLOCK: no reader, no wait)."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return
    os.close(fd)


#: The seeded butler's trace links (``[butler.telemetry] trace_url``).
TRACE_URL = "https://grafana.example/explore?trace={trace_id}&x=1"
SEEDED_EXTRA = f"""
[butler.telemetry]
trace_url = "{TRACE_URL}"

[[butler.schedule]]
name = "morning"
cron = "0 8 * * *"
timezone = "Asia/Kolkata"
prompt = "Good morning: what is due today?"
"""


@dataclass
class Seeded:
    """A running butler whose sessions table a test fills directly."""

    daemon: DaemonProcess
    schema: str

    @property
    def url(self) -> str:
        return self.daemon.url

    def sql(self, query: str, *args: Any) -> list[Any]:
        """Run one statement in the butler's schema; return its rows."""
        return run_sql(self.schema, query, *args)


def run_sql(schema: str, query: str, *args: Any) -> list[Any]:
    """One statement in ``schema``, from a thread of its own.

    Playwright's sync API runs an event loop in the test's thread, so
    ``asyncio.run`` cannot run there.
    """

    async def go() -> list[Any]:
        conn = await asyncpg.connect(TEST_DSN, server_settings={"search_path": schema})
        try:
            return await conn.fetch(query, *args)
        finally:
            await conn.close()

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, go()).result()


@pytest.fixture
def seeded(roster, schema_name, _isolated_data_dir) -> Iterator[Seeded]:
    """A butler daemon (a runtime that echoes its prompt's last line) to seed rows into."""
    runtime = {"type": "command", "command": [sys.executable, str(FIFO_AGENT), "{prompt_file}"]}
    port = free_port()
    folder = write_butler(
        roster, "finder", port=port, schema=schema_name, runtime=runtime, extra=SEEDED_EXTRA
    )
    env = {"BUTLER_DATA_DIR": str(_isolated_data_dir), "ANTHROPIC_API_KEY": "sk-test"}
    with DaemonProcess(folder, port=port, database_url=TEST_DSN, env=env) as daemon:
        yield Seeded(daemon, schema_name)


#: The web chat tests' runtime: it writes its answer in parts (chat_agent.py).
CHAT_AGENT = Path(__file__).with_name("chat_agent.py")
#: The chat butler's description, which /help says.
CHAT_DESCRIPTION = "Keeps the household's medications and appointments."


@dataclass
class ChatButler:
    """A running butler whose runtime is ``chat_agent.py``, and a folder for its FIFOs."""

    daemon: DaemonProcess
    schema: str
    folder: Path

    @property
    def url(self) -> str:
        return self.daemon.url

    def hold(self, name: str) -> Path:
        """A FIFO the runtime waits on when its message says ``WAIT:<path>``."""
        fifo = self.folder / name
        os.mkfifo(fifo)
        return fifo

    @staticmethod
    def release(fifo: Path) -> None:
        with fifo.open("w") as writer:
            writer.write("go")

    def sql(self, query: str, *args: Any) -> list[Any]:
        return run_sql(self.schema, query, *args)


@pytest.fixture
def chat_butler(roster, schema_name, _isolated_data_dir) -> Iterator[ChatButler]:
    """A running butler "health" whose runtime is ``chat_agent.py``."""
    runtime = {
        "type": "command",
        "command": [sys.executable, str(CHAT_AGENT), "{prompt_file}"],
        "max_concurrent_sessions": 2,
    }
    port = free_port()
    folder = write_butler(roster, "health", port=port, schema=schema_name, runtime=runtime)
    toml = folder / "butler.toml"
    toml.write_text(
        toml.read_text().replace("[butler]\n", f'[butler]\ndescription = "{CHAT_DESCRIPTION}"\n', 1)
    )
    env = {"BUTLER_DATA_DIR": str(_isolated_data_dir), "ANTHROPIC_API_KEY": "sk-test"}
    # FIFOs in a short folder: their paths are in the messages the screenshots show.
    holds = Path(tempfile.mkdtemp(prefix="chat-"))
    try:
        with DaemonProcess(folder, port=port, database_url=TEST_DSN, env=env) as daemon:
            butler = ChatButler(daemon, schema_name, holds)
            try:
                yield butler
            finally:
                for fifo in holds.glob("hold-*"):
                    _release_quietly(fifo)
    finally:
        shutil.rmtree(holds, ignore_errors=True)
