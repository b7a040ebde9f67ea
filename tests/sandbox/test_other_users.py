"""What another local user (``nobody``) can learn while a Claude session runs: nothing private.

No prompt, system prompt or session header in any process's command line;
the data folder, the session's home and workspace closed to it; the daemon
with a private umask. Checked with ``runuser -u nobody``, as that user would.
"""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conformance.conftest import _drop_schema
from tests.conformance.runtimes import FAKE_KEY
from tests.conftest import TEST_DSN
from tests.fakes.cli_recipes import CLAUDE_BUNDLED
from tests.fakes.model_server import FakeModelServer, Hang
from tests.helpers import (
    DaemonProcess,
    butler_client,
    free_port,
    require_cli,
    require_jail,
    wait_until,
    write_butler,
)

SYSTEM_MARKER = "SYSTEM-PROMPT-MARKER-7f3a"
PROMPT_MARKER = "PROMPT-MARKER-91c2"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="another user exists to run as only for root"),
]


def as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["runuser", "-u", "nobody", "--", *argv], capture_output=True, text=True, check=False
    )


def every_cmdline_as_nobody() -> str:
    """All command lines another user can read, NUL-separated arguments as spaces."""
    script = "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f 2>/dev/null; echo; done"
    return as_nobody("/bin/sh", "-c", script).stdout


@pytest.fixture
def claude_daemon(
    tmp_path: Path, fake_model: FakeModelServer
) -> Iterator[tuple[DaemonProcess, Path]]:
    if not CLAUDE_BUNDLED.exists():
        require_cli(f"the claude-agent-sdk bundled CLI is missing at {CLAUDE_BUNDLED}")
    require_jail()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    port = free_port()
    roster = tmp_path / "roster"
    (roster / "shared").mkdir(parents=True)
    extra = '\n[butler.env]\noptional = ["ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"]\n'
    folder = write_butler(
        roster, "private", port=port, schema=schema, extra=extra, prompt=f"{SYSTEM_MARKER}\n"
    )
    parent = tmp_path / "owner-private"
    parent.mkdir(mode=0o700)
    data = parent / "data"
    env = {
        "ANTHROPIC_BASE_URL": fake_model.url,
        "ANTHROPIC_API_KEY": FAKE_KEY,
        "BUTLER_DATA_DIR": str(data),
        "BUTLER_SANDBOX": "bwrap",
    }
    try:
        with DaemonProcess(folder, port=port, database_url=TEST_DSN, env=env) as daemon:
            yield daemon, data
        assert stat.S_IMODE(parent.stat().st_mode) == 0o700  # never widened
    finally:
        _drop_schema(schema)


def assert_private(daemon_pid: int, data: Path, homes: Path, home: Path) -> None:
    """The daemon's umask, and its folders and workspace files closed to other users."""
    status_file = Path("/proc") / str(daemon_pid) / "status"
    assert "Umask:\t0077" in status_file.read_text()
    for folder in (data, data / "butlers" / "private", homes, home):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
        assert as_nobody("ls", str(folder)).returncode != 0, folder
    temp = Path("/tmp")
    workspace = next(temp.glob("butler_private_*"))
    assert stat.S_IMODE(workspace.stat().st_mode) == 0o700
    for path in workspace.rglob("*"):
        if path.is_file():
            assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path


async def test_another_user_reads_no_prompt_and_no_session_file(
    claude_daemon: tuple[DaemonProcess, Path], fake_model: FakeModelServer
):
    daemon, data = claude_daemon
    fake_model.script = [Hang()]
    async with butler_client(f"{daemon.url}/mcp", timeout=120) as client:
        args = {"prompt": f"{PROMPT_MARKER} go", "timeout_s": 60}
        running = asyncio.create_task(client.call_tool("trigger", args))
        await asyncio.to_thread(wait_until, lambda: fake_model.requests, 60)
        homes = data / "butlers" / "private" / "homes"
        (home,) = list(homes.iterdir())
        cmdlines = every_cmdline_as_nobody()
        assert "--system-prompt-file" in cmdlines  # the runtime is there, by file
        for secret in (SYSTEM_MARKER, PROMPT_MARKER, home.name, FAKE_KEY):
            assert secret not in cmdlines, secret
        await asyncio.to_thread(assert_private, daemon.proc.pid, data, homes, home)
        running.cancel()
