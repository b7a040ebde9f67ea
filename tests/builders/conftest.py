"""Builder fixtures: a throwaway git repository, a private tmux server, a butler daemon
whose runtime is the ``command`` runtime running a small interactive agent."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from butler.store.db import quote_ident
from tests.conftest import TEST_DSN, drop_schemas
from tests.helpers import (
    REPO,
    DaemonProcess,
    free_port,
    require_tool,
    wait_until,
    write_butler,
)

AGENT = Path(__file__).with_name("agent.py")
AGENT_ARGS = ["--prompt-file", "{prompt_file}", "--system", "{system_prompt_file}"]
COMMAND_RUNTIME = {
    "type": "command",
    "command": [sys.executable, str(AGENT), *AGENT_ARGS, "--mcp", "{mcp_config}", "--once"],
    "interactive_command": [sys.executable, str(AGENT), *AGENT_ARGS, "--mcp", "{mcp_config}"],
}
BUTLER_PROMPT = "You are the test butler.\n"


def run(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run a command (never through a shell) and return its stdout; fail loudly."""
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{argv}: {done.stderr}"
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one commit holding a spec, its plan and two source files."""
    return make_repo(tmp_path / "project")


def make_repo(root: Path) -> Path:
    """The ``repo`` fixture's repository, made at ``root``."""
    require_tool("git")
    files = {
        "README.md": "# project\n",
        "specs/0009-terminal-click.md": "# Spec 0009: click the terminal\n",
        "plans/0009-terminal-click.md": "# Plan 0009\n",
        "specs/0010-no-plan.md": "# Spec 0010\n",
        "src/auth.ts": "export const auth = 1;\n",
        "src/login.ts": "export const login = 1;\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    run("git", "init", "--quiet", "--initial-branch=main", cwd=root)
    run("git", "-c", "user.name=t", "-c", "user.email=t@t", "add", ".", cwd=root)
    run("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init", cwd=root)
    return root


@pytest.fixture
def tmux_socket(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A tmux server of this test's own, killed afterwards with everything on it."""
    name = tmux_socket_name()
    monkeypatch.setenv("BUTLER_TMUX_SOCKET", name)
    yield name
    kill_tmux_server(name)


def tmux_socket_name() -> str:
    """A name for a tmux server of a test's own (``tmux -L``)."""
    require_tool("tmux")
    return f"bt{uuid.uuid4().hex[:10]}"


def kill_tmux_server(name: str) -> None:
    """Stop a tmux server and remove its socket file, which tmux leaves behind."""
    subprocess.run(["tmux", "-L", name, "kill-server"], capture_output=True, check=False)
    folder = Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"
    (folder / name).unlink(missing_ok=True)


def screen(socket: str, session: str) -> str:
    """What a tmux session's pane shows, wrapped lines joined ("" when there is none)."""
    done = subprocess.run(
        ["tmux", "-L", socket, "capture-pane", "-p", "-J", "-S", "-200", "-t", f"={session}:"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout if done.returncode == 0 else ""


def write_builder_butler(
    roster: Path, schema: str, port: int, runtime: dict[str, Any] | None = None, extra: str = ""
) -> Path:
    """A butler with a builder role and two protocols, one with a role of its own."""
    folder = write_butler(
        roster,
        "tester",
        port=port,
        schema=schema,
        runtime=runtime or COMMAND_RUNTIME,
        prompt=BUTLER_PROMPT,
        extra=extra,
    )
    texts = {
        "roles/builder.md": "ROLE: builder. Commit often.\n",
        "roles/reviewer.md": "ROLE: reviewer. Read, do not write.\n",
        "protocols/cleanup/protocol.md": "# Cleanup\nTidy up.\n",
        "protocols/experiment/protocol.md": "# Experiment\nTest a hypothesis.\n",
    }
    for name, text in texts.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


@dataclass
class Builders:
    """A running butler daemon, its repository and tmux server, and ways to drive them."""

    daemon: DaemonProcess
    folder: Path
    repo: Path
    socket: str
    schema: str
    data_dir: Path

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "BUTLER_TMUX_SOCKET": self.socket,
            "BUTLER_DATA_DIR": str(self.data_dir),
        }

    def cli(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """``butler <args> --config <butler>``, run from the repository by default."""
        argv = [sys.executable, "-m", "butler.cli", *args, "--config", str(self.folder)]
        return subprocess.run(
            argv, cwd=cwd or self.repo, env=self.env(), capture_output=True, text=True, check=False
        )

    def spawn(self, *args: str) -> dict[str, Any]:
        """``butler builders spawn <args> --json``; the builder it started."""
        done = self.cli("builders", "spawn", *args, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def screen(self, builder: dict[str, Any]) -> str:
        return screen(self.socket, builder["tmux_session"])

    def wait_screen(self, builder: dict[str, Any], text: str, timeout: float = 20) -> str:
        """The screen once it shows ``text``."""

        def shows() -> str | None:
            shown = self.screen(builder)
            return shown if text in shown else None

        try:
            return wait_until(shows, timeout)
        except TimeoutError:
            raise AssertionError(
                f"{text!r} not shown; the screen:\n{self.screen(builder)}"
            ) from None

    def seen(self, builder: dict[str, Any]) -> dict[str, Any]:
        """What the agent got: prompt, system prompt, MCP config, env names, cwd."""
        path = self.data_dir / "butlers" / "tester" / "homes" / builder["session_id"] / "seen.json"
        wait_until(path.is_file, timeout=20)
        return json.loads(path.read_text())

    def row(self, session_id: str) -> dict[str, Any]:
        """The session row as stored in PostgreSQL."""
        return query(self.schema, "SELECT * FROM sessions WHERE id = $1", uuid.UUID(session_id))[0]

    def git(self, *args: str) -> str:
        return run("git", *args, cwd=self.repo)


def query(schema: str, sql: str, *args: Any) -> list[dict[str, Any]]:
    """Rows of ``sql`` in ``schema``, from a connection of the test's own."""

    async def go() -> list[dict[str, Any]]:
        conn = await asyncpg.connect(TEST_DSN, server_settings={"search_path": quote_ident(schema)})
        try:
            rows = await conn.fetch(sql, *args)
        finally:
            await conn.close()
        return [
            {k: json.loads(v) if k in ("metadata", "tool_calls") else v for k, v in r.items()}
            for r in rows
        ]

    return asyncio.run(go())


@pytest.fixture
def builders(
    roster: Path, schema_name: str, repo: Path, tmux_socket: str, _isolated_data_dir: Path
) -> Iterator[Builders]:
    """A ``butler run`` daemon of a butler whose runtime is the interactive test agent."""
    with builders_daemon(roster, schema_name, repo, tmux_socket, _isolated_data_dir) as running:
        yield running


@pytest.fixture(scope="module")
def builders_that_spawn_nothing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Builders]:
    """One ``builders`` daemon for a module's tests that are all refused before anything
    is made: a refusal leaves the daemon, its repository and its schema as they were,
    so starting one per test (seconds each on a loaded machine) would show nothing more.
    Each such test still checks that nothing was created."""
    root = tmp_path_factory.mktemp("builders")
    roster = root / "roster"
    (roster / "shared").mkdir(parents=True)
    schema = f"t_{uuid.uuid4().hex[:12]}"
    socket = tmux_socket_name()
    data = tmp_path_factory.mktemp("butler-data")
    try:
        with builders_daemon(roster, schema, make_repo(root / "project"), socket, data) as running:
            yield running
    finally:
        kill_tmux_server(socket)
        drop_schemas(schema)


@contextmanager
def builders_daemon(
    roster: Path, schema: str, repo: Path, socket: str, data_dir: Path
) -> Iterator[Builders]:
    port = free_port()
    folder = write_builder_butler(roster, schema, port)
    env = {"BUTLER_TMUX_SOCKET": socket, "BUTLER_DATA_DIR": str(data_dir)}
    env |= {"ANTHROPIC_API_KEY": "sk-test", "BUTLER_CANARY": "must-not-leak"}
    with DaemonProcess(folder, port=port, database_url=TEST_DSN, env=env) as daemon:
        yield Builders(daemon, folder, repo, socket, schema, data_dir)


__all__ = ["REPO", "Builders", "query", "run", "screen", "write_builder_butler"]
