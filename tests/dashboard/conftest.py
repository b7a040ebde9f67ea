"""Dashboard fixtures: a butler daemon with sessions a test holds open, and real Chromium.

Chromium is Debian's (``scripts/setup-dev`` installs it), driven by Playwright's
Python package with ``executable_path``: nothing is downloaded.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.builders import conftest as builder_fixtures
from tests.builders.conftest import COMMAND_RUNTIME, Builders, write_builder_butler
from tests.conftest import TEST_DSN
from tests.helpers import REPO, TEST_TOKEN, DaemonProcess, butler_client, free_port, missing_tool

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


@pytest.fixture
def chromium(dashboard: Any) -> Iterator[Any]:
    """A headless Chromium browser; the test fails naming the set-up script without it.

    Per test, and set up after the daemon: Playwright's sync API runs an event loop
    in this thread, which must be gone before fixtures that call ``asyncio.run``
    tear down.
    """
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
