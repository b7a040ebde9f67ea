"""A jailed Claude session starts with no Python launcher: the jail's script sets its env.

claude-agent-sdk merges the daemon's whole environment into the CLI's; outside
a jail a Python launcher filters it, inside one the jail's own launch script
and bubblewrap do, a process start fewer per session. The fake CLI (driven by
the real SDK) records the environment and process group it got.
"""

from __future__ import annotations

import json

import pytest

from butler.config import RuntimeConfig
from butler.runtimes.registry import get_adapter
from butler.spawner.spawner import TriggerRequest
from tests.fakes.runtime import FAKE_CLAUDE
from tests.helpers import require_jail, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _jail() -> None:
    """Every test here runs the jail: without one it fails, naming scripts/setup-dev."""
    require_jail()


async def test_a_jailed_cli_gets_exactly_its_environment_without_a_launcher(
    make_spawner, monkeypatch
):
    monkeypatch.setenv("BUTLER_SANDBOX", "bwrap")
    monkeypatch.setenv("BUTLER_CANARY_SECRET", "do-not-leak")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-daemon")
    adapter = get_adapter("claude-code", RuntimeConfig(cli_path=str(FAKE_CLAUDE)))
    spawner = make_spawner(adapter, runtime={"cli_path": str(FAKE_CLAUDE)})
    assert spawner.sandbox == "bwrap"
    result = await spawner.trigger(TriggerRequest("do it"))
    assert result.success, result.error
    run = json.loads((spawner.config.config_dir / "fake_claude_run.json").read_text())
    env = run["env"]
    assert "BUTLER_CANARY_SECRET" not in env
    assert env["ANTHROPIC_API_KEY"] == "sk-test"  # the credential store's, not the daemon's
    # The SDK's own variables come through (appended to the jail's options file).
    assert env["CLAUDE_CODE_ENTRYPOINT"].startswith("sdk")
    assert env["HTTPS_PROXY"].startswith("http://127.0.0.1:")  # the jail's proxy
    # TRACEPARENT joins when a tracer is recording (it depends on what ran before in this process).
    allowed = {"PATH", "ANTHROPIC_API_KEY", "HOME", "CLAUDE_CONFIG_DIR", "PWD", "LC_CTYPE"}
    allowed.add("TRACEPARENT")
    unexpected = {
        k
        for k in env
        if k not in allowed
        and not k.startswith(("CLAUDE_", "DISABLE_", "ENABLE_"))
        and not k.lower().endswith("_proxy")
        and k != "NODE_USE_ENV_PROXY"
    }
    assert not unexpected


def _fake_cli_running() -> bool:
    import psutil

    return any(
        str(FAKE_CLAUDE) in " ".join(p.info["cmdline"] or []) and p.info["status"] != "zombie"
        for p in psutil.process_iter(["cmdline", "status"])
    )


async def test_a_jailed_cli_that_hangs_is_ended_at_the_timeout(make_spawner, monkeypatch):
    # The launch script records its pid and leads a new session: that group is the jail.
    monkeypatch.setenv("BUTLER_SANDBOX", "bwrap")
    adapter = get_adapter("claude-code", RuntimeConfig(cli_path=str(FAKE_CLAUDE)))
    spawner = make_spawner(adapter, runtime={"cli_path": str(FAKE_CLAUDE)})
    result = await spawner.trigger(TriggerRequest("MODE:hang", timeout_s=1.5))
    assert result.success is False and result.error == "timeout after 1.5 s"
    assert result.output == "partial before hang"
    wait_until(lambda: not _fake_cli_running(), timeout=10)
