"""The fake model server drives every genuine agent CLI through a full tool loop.

Each e2e test runs a real CLI, offline, against `FakeModelServer` and a tiny
MCP server: the fake model asks for `state_set`, the CLI must call it on the
MCP server, send the result back, and print the scripted final answer.
"""

from __future__ import annotations

import socket
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.fakes.cli_recipes import RECIPES, Target, run
from tests.fakes.mcp_probe import McpProbe
from tests.fakes.model_server import FakeModelServer, Hang, Text, ToolCall
from tests.helpers import SETUP

FINAL_TEXT = "Done. 3 tasks checked."
CLI_TIMEOUT_S = 180.0

# The API each CLI speaks, and the paths it is known to call.
EXPECTED_CALLS = {
    "claude": ("anthropic", {"/v1/messages"}),
    "codex": ("openai-responses", {"/v1/responses"}),
    "gemini": (
        "gemini",
        # Without -m a router model scores the prompt first (non-streamed, JSON schema).
        {":generateContent", ":streamGenerateContent"},
    ),
    "opencode": ("openai-chat", {"/v1/chat/completions"}),
    "copilot": ("openai-chat", {"/v1/chat/completions"}),
}


@pytest.mark.e2e
@pytest.mark.parametrize("cli", sorted(RECIPES))
def test_cli_runs_the_scripted_tool_loop(
    cli: str, fake_model: FakeModelServer, mcp_probe: McpProbe, tmp_path: Path, cli_cache: Path
) -> None:
    recipe = RECIPES[cli]
    if reason := recipe.missing_reason():
        pytest.fail(f"{reason} (or run {SETUP})", False)
    fake_model.script = [ToolCall("state_set", {"key": "k", "value": "v"}), Text(FINAL_TEXT)]
    target = Target(
        model_url=fake_model.url,
        mcp_name="probe",
        mcp_url=mcp_probe.url,
        home=tmp_path / "home",
        workdir=tmp_path / "work",
        prompt="Set k to v, then report.",
        cache=cli_cache,
    )

    finished = run(recipe.build(target), timeout=CLI_TIMEOUT_S)

    assert finished.returncode == 0, finished.describe()
    assert mcp_probe.calls == [("k", "v")], finished.describe()
    assert FINAL_TEXT in finished.stdout, finished.describe()
    api, path_markers = EXPECTED_CALLS[cli]
    called = {(request.api, request.path) for request in fake_model.requests}
    assert {name for name, _ in called} == {api}, called
    for marker in path_markers:
        assert any(marker in path for _, path in called), (marker, called)


@pytest.mark.parametrize("release", ["stop", "reset"])
def test_hung_request_is_released_promptly(release: str) -> None:
    server = FakeModelServer([Hang()]).start()
    outcome: list[int] = []

    def call() -> None:
        request = urllib.request.Request(
            f"{server.url}/v1/chat/completions", data=b'{"messages": []}', method="POST"
        )
        try:
            urllib.request.urlopen(request, timeout=30)
        except urllib.error.HTTPError as error:
            outcome.append(error.code)

    caller = threading.Thread(target=call)
    caller.start()
    try:
        deadline = time.monotonic() + 10
        while not server.requests and time.monotonic() < deadline:
            caller.join(0.01)
        assert server.requests, "the hanging request never arrived"
        assert caller.is_alive(), "a Hang step answered"

        started = time.monotonic()
        getattr(server, release)()
        caller.join(10)

        assert time.monotonic() - started < 5
        assert outcome == [503]
    finally:
        server.stop()


def test_stop_frees_the_port() -> None:
    with FakeModelServer() as server:
        port = int(server.url.rsplit(":", 1)[1])
    with pytest.raises(RuntimeError, match="not started"):
        _ = server.url
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port)):
        pass
