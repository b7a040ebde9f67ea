"""The Claude Code adapter: pure parts on captured real output, error paths on a fake CLI.

The fake CLI (tests/runtimes/fake_claude.py) is driven by the real
claude-agent-sdk through butler's launcher, so these tests exercise the real
protocol, process group handling and environment filtering.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from claude_agent_sdk._internal.message_parser import parse_message  # test-only: replay captures

from butler.config import RuntimeConfig
from butler.runtimes.base import Invocation
from butler.runtimes.claude_code import (
    build_options,
    parse_extra_args,
    session_files,
)
from butler.runtimes.claude_stream import claude_fold, message_dict
from butler.runtimes.registry import get_adapter
from butler.spawner.spawner import TriggerRequest
from tests.fakes.runtime import FAKE_CLAUDE, sample_invocation

pytestmark = pytest.mark.slow

CAPTURES = Path(__file__).resolve().parent / "captures"
CAPTURE = CAPTURES / "claude_stream_json_stdout_mcp.jsonl"


def test_unknown_runtime_lists_available_adapters():
    with pytest.raises(ValueError, match=r"available adapters: .*claude-code"):
        get_adapter("no-such-runtime")


def test_stream_parser_on_a_captured_real_run():
    stream = claude_fold("hub")
    for line in CAPTURE.read_text().splitlines():
        data = json.loads(line)
        if data["type"] == "control_response":
            continue
        message = parse_message(data)
        if message is not None:
            stream.add(message_dict(message))
    result = stream.result()
    assert result.error is None
    assert result.output == "All done."
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("ping", {"text": "hello"})]
    assert result.usage.input_tokens == 200 and result.usage.output_tokens == 40
    assert result.cost_usd == pytest.approx(0.0012)
    assert result.runtime_session_id == "222e8f1b-7fa0-4e33-837a-7c2de265ecde"


def _invocation(tmp_path: Path, **kw) -> Invocation:
    changes = {"workdir": tmp_path, "max_turns": 20, **kw}
    return sample_invocation(
        tmp_path, **{"env": {"PATH": "/usr/bin", "ANTHROPIC_API_KEY": "k"}, **changes}
    )


def test_options_lock_the_runtime_to_this_butler(tmp_path):
    invocation = _invocation(tmp_path, model="claude-x", args=("--foo", "1"))
    options = build_options(invocation, tmp_path)
    files = session_files(invocation)
    # By file: a prompt or a session header on the command line is read by every local user.
    assert json.loads(files[Path(options.mcp_servers)]) == {
        "mcpServers": {
            "health": {
                "type": "http",
                "url": "http://127.0.0.1:8001/mcp?session=s",
                "headers": {"X-Butler-Session": "s"},
            }
        }
    }
    assert options.strict_mcp_config is True and options.setting_sources == []
    assert options.system_prompt["type"] == "file" and options.max_turns == 20
    assert files[Path(options.system_prompt["path"])] == "You are health."
    assert options.cwd == str(tmp_path) and options.model == "claude-x"
    assert "mcp__health" in options.allowed_tools
    assert options.env["DISABLE_AUTOUPDATER"] == "1" and options.env["DISABLE_TELEMETRY"] == "1"
    assert options.env["HOME"] == str(tmp_path / "home")
    assert options.extra_args == {"foo": "1"}


def test_extra_args_parsing():
    assert parse_extra_args(["--a", "1", "--flag", "--b=2"]) == {"a": "1", "flag": None, "b": "2"}
    with pytest.raises(ValueError, match="expected a --flag"):
        parse_extra_args(["oops"])


@pytest.fixture
def fake_cli_spawner(make_spawner):
    def build(**runtime):
        return make_spawner(
            get_adapter("claude-code", RuntimeConfig(cli_path=str(FAKE_CLAUDE), **runtime)),
            runtime={"cli_path": str(FAKE_CLAUDE), **runtime},
            environ={"ANTHROPIC_API_KEY": "sk-test"},
        )

    return build


def _pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


async def test_fake_cli_success_through_the_sdk(fake_cli_spawner):
    spawner = fake_cli_spawner()
    result = await spawner.trigger(TriggerRequest("do it"))
    assert result.success, result.error
    assert result.output == "Done. 3 tasks checked."
    assert result.tool_calls[0]["name"] == "state_get"  # mcp__tester__ prefix stripped
    assert result.usage == {
        "input_tokens": 120,
        "output_tokens": 30,
        "cache_read_tokens": 10,
        "cache_write_tokens": 5,
    }
    run = json.loads((spawner.config.config_dir / "fake_claude_run.json").read_text())
    argv = run["argv"]
    assert "--strict-mcp-config" in argv
    assert argv[argv.index("--max-turns") + 1] == "20"
    assert run["pgid"] == run["pid"]  # its own process group


async def test_canary_variable_never_reaches_the_runtime(fake_cli_spawner, monkeypatch):
    monkeypatch.setenv("BUTLER_CANARY_SECRET", "do-not-leak")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-daemon")
    spawner = fake_cli_spawner()
    await spawner.trigger(TriggerRequest("do it"))
    env = json.loads((spawner.config.config_dir / "fake_claude_run.json").read_text())["env"]
    assert "BUTLER_CANARY_SECRET" not in env
    assert env["ANTHROPIC_API_KEY"] == "sk-test"  # from the credential store, not the daemon
    # LC_CTYPE is set by the fake CLI's own Python interpreter (PEP 538), not passed in.
    allowed = {
        "PATH",
        "ANTHROPIC_API_KEY",
        "HOME",
        "CLAUDE_CONFIG_DIR",
        "PWD",
        "LC_CTYPE",
        "TRACEPARENT",
    }
    extra = {k for k in env if k not in allowed}
    unexpected = {k for k in extra if not k.startswith(("CLAUDE_", "DISABLE_", "ENABLE_"))}
    assert not unexpected


async def test_hang_ends_in_timeout_with_no_process_left(fake_cli_spawner):
    spawner = fake_cli_spawner()
    result = await spawner.trigger(TriggerRequest("MODE:hang", timeout_s=1.5))
    assert result.success is False and result.error == "timeout after 1.5 s"
    assert result.output == "partial before hang"
    folder = spawner.config.config_dir
    run = json.loads((folder / "fake_claude_run.json").read_text())
    child = int((folder / "fake_claude_child.pid").read_text())
    assert _pid_gone(run["pid"]) and _pid_gone(child)
    row = await spawner.sessions.get(result.session_id)
    assert row["status"] == "failed" and row["error"] == "timeout after 1.5 s"


async def test_crash_is_a_failure_carrying_stderr_and_partial_output(fake_cli_spawner):
    result = await fake_cli_spawner().trigger(TriggerRequest("MODE:crash"))
    assert result.success is False
    assert "exit code: 3" in result.error and "boom: the fake CLI crashed" in result.error
    assert result.output == "partial before crash"


async def test_garbage_output_is_a_clear_failure(fake_cli_spawner):
    result = await fake_cli_spawner().trigger(TriggerRequest("MODE:garbage"))
    assert result.success is False and result.error
    assert "JSON" in result.error or "without a result" in result.error


async def test_max_turns_error_is_reported(fake_cli_spawner):
    result = await fake_cli_spawner().trigger(TriggerRequest("MODE:max_turns"))
    assert result.success is False and result.error.startswith("max turns reached")
    assert result.output == "still working"


async def test_missing_cli_is_a_clear_error(make_spawner, tmp_path):
    missing = tmp_path / "nope" / "claude"
    spawner = make_spawner(
        get_adapter("claude-code", RuntimeConfig(cli_path=str(missing))),
        runtime={"cli_path": str(missing)},
    )
    result = await spawner.trigger(TriggerRequest("x"))
    assert result.success is False and "not found" in result.error.lower()


def test_the_model_claude_code_names_on_its_own_error_message_is_not_recorded():
    # What Claude Code 2.1.332 streams when the model API fails: a message it wrote itself.
    failed = {
        "type": "assistant",
        "message": {
            "model": "<synthetic>",
            "content": [{"type": "text", "text": "API Error: 400 boom"}],
        },
    }
    stream = claude_fold("hub")
    stream.add(failed)
    assert stream.result().model is None
    stream.add({"type": "assistant", "message": {"model": "claude-sonnet-4-5", "content": []}})
    assert stream.result().model == "claude-sonnet-4-5"
