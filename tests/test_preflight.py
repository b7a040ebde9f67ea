"""A person with no key, or no CLI, learns at start and from the first failed trigger what to do."""

from __future__ import annotations

import json
import re

import pytest

from butler.config import load_config
from butler.runtimes.registry import get_adapter
from butler.spawner.preflight import NEEDS, missing_cli, missing_credential
from butler.store.credentials import CredentialStore
from tests.conftest import TEST_DSN
from tests.helpers import REPO, DaemonProcess, butler_client, free_port, wait_until, write_butler


def butler_config(roster, schema_name, runtime, extra=""):
    folder = write_butler(
        roster, "tester", port=free_port(), schema=schema_name, runtime=runtime, extra=extra
    )
    return load_config(folder)


@pytest.mark.e2e
async def test_no_key_warns_once_at_start_and_the_failed_trigger_names_the_variable(
    roster, schema_name, _isolated_data_dir
):
    port = free_port()
    folder = write_butler(roster, "tester", port=port, schema=schema_name)
    daemon = DaemonProcess(folder, port=port, database_url=TEST_DSN)
    for name in NEEDS["claude-code"].keys:
        daemon.env.pop(name, None)
    daemon.env["BUTLER_DATA_DIR"] = str(_isolated_data_dir)
    with daemon:
        warnings = [line for line in daemon.logs().splitlines() if "ANTHROPIC_API_KEY" in line]
        assert len(warnings) == 1, daemon.logs()
        assert json.loads(warnings[0])["level"] == "warning"
        async with butler_client(f"{daemon.url}/mcp") as client:
            result = await client.call_tool("trigger", {"prompt": "hello"})
        body = result.structured_content
        assert body["success"] is False
        # The CLI's own words stay; what to set comes first.
        assert "set ANTHROPIC_API_KEY" in body["error"], body["error"]
        assert "Not logged in" in body["error"]

        def failed_line() -> str | None:
            for line in daemon.logs().splitlines():
                if body["session_id"] in line and "failed" in line:
                    return line
            return None

        line = json.loads(wait_until(failed_line, timeout=10))
        assert "set ANTHROPIC_API_KEY" in line["error"]


async def test_a_key_the_sessions_receive_or_a_login_silences_the_warning(
    db, roster, schema_name, _isolated_data_dir
):
    config = butler_config(roster, schema_name, {"type": "codex"})
    nothing = CredentialStore(db, {})
    line = await missing_credential(config, nothing)
    assert line is not None and "set OPENAI_API_KEY" in line and "codex login" in line
    assert await missing_credential(config, CredentialStore(db, {"OPENAI_API_KEY": "k"})) is None
    # compose hands an unset key over as an empty variable: that is no credential.
    assert await missing_credential(config, CredentialStore(db, {"OPENAI_API_KEY": ""}))
    await nothing.set("OPENAI_API_KEY", "from-the-table")
    assert await missing_credential(config, nothing) is None

    gemini = butler_config(roster, schema_name, {"type": "gemini"})
    # In the daemon's environment but never handed to sessions: still a warning, saying why.
    line = await missing_credential(gemini, CredentialStore(None, {"GEMINI_API_KEY": "k"}))
    assert line is not None and "[butler.env] optional" in line
    declared = butler_config(
        roster, schema_name, {"type": "gemini"}, '\n[butler.env]\noptional = ["GEMINI_API_KEY"]\n'
    )
    key = CredentialStore(None, {"GEMINI_API_KEY": "k"})
    assert await missing_credential(declared, key) is None
    login = _isolated_data_dir / "butlers" / "tester" / "home" / ".gemini" / "oauth_creds.json"
    login.parent.mkdir(parents=True)
    login.write_text("{}")
    assert await missing_credential(gemini, CredentialStore(None, {})) is None


def test_a_missing_cli_is_named_with_its_pinned_install_command(
    roster, schema_name, monkeypatch, tmp_path
):
    pins = json.loads((REPO / "clis" / "package.json").read_text())["dependencies"]
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing installed there
    for runtime, package in {
        "codex": "@openai/codex",
        "gemini": "@google/gemini-cli",
        "opencode": "opencode-ai",
        "copilot": "@github/copilot",
    }.items():
        config = butler_config(roster, schema_name, {"type": runtime})
        line = missing_cli(get_adapter(runtime, config.runtime))
        assert line is not None, runtime
        assert re.search(rf"npm install -g {re.escape(package)}@{pins[package]}\b", line), line
        # Installed where the service's PATH does not look (nvm...): the fix is named first.
        assert "set [butler.runtime] cli_path" in line.split("npm install")[0], line
    claude = butler_config(roster, schema_name, {"type": "claude-code"})
    assert missing_cli(get_adapter("claude-code", claude.runtime)) is None  # the SDK's own
    absent = butler_config(
        roster, schema_name, {"type": "claude-code", "cli_path": str(tmp_path / "claude")}
    )
    assert "cli_path" in missing_cli(get_adapter("claude-code", absent.runtime))
