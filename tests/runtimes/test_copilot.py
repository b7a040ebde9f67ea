"""The Copilot adapter's pure parts, on streams captured from the genuine CLI (1.0.102)."""

from __future__ import annotations

import json
from pathlib import Path

from butler.config import RuntimeConfig
from butler.runtimes.base import Invocation, Usage
from butler.runtimes.copilot import (
    CopilotAdapter,
    build_argv,
    build_env,
    parse_event,
    parse_usage_report,
)
from butler.runtimes.fold import Fold
from butler.runtimes.registry import get_adapter
from tests.fakes.runtime import sample_invocation

CAPTURES = Path(__file__).parent / "captures"


def parse(name: str) -> Fold:
    stream = Fold(parse_event, "hub")
    for line in (CAPTURES / name).read_text().splitlines():
        stream.feed(line)
    return stream


def invocation(tmp_path: Path, **changes: object) -> Invocation:
    return sample_invocation(
        tmp_path, **{"env": {"PATH": "/usr/bin", "COPILOT_GITHUB_TOKEN": "t"}, **changes}
    )


def test_a_captured_run_with_an_mcp_tool_call() -> None:
    result = parse("copilot_json_mcp.jsonl").result()
    assert result.error is None
    assert result.output == "All done."
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("ping", {"text": "hello"})]
    assert result.runtime_session_id == "545a822d-d1a9-48c5-911b-9e67770c24de"
    assert result.num_turns == 2
    # Token counts are not in the stream, only in the usage report.
    assert result.usage == Usage() and result.cost_usd is None


def test_the_captured_usage_report_sums_its_models() -> None:
    report = json.loads((CAPTURES / "copilot_usage_output_file.json").read_text())
    assert parse_usage_report(report) == Usage(300, 60, 30, 0)
    assert parse_usage_report({"modelMetrics": {"a": {"usage": {"inputTokens": 1}}}}) == Usage(1)
    assert parse_usage_report({}) == Usage()


def test_a_captured_api_error_is_the_runtimes_own_message() -> None:
    stream = parse("copilot_json_error.jsonl")
    result = stream.result()
    assert result.error == "runtime error: 400 boom from fake"
    assert result.runtime_session_id


def test_a_captured_failed_tool_call_keeps_its_error() -> None:
    result = parse("copilot_json_tool_error.jsonl").result()
    assert result.error is None and result.output == "Could not store it."
    [call] = result.tool_calls
    assert call.name == "state_set" and call.arguments == {"key": "k"}
    assert call.error and "Missing required argument" in call.error


def test_tools_of_other_servers_keep_copilots_name() -> None:
    stream = Fold(parse_event, "health")
    start = {"toolCallId": "1", "toolName": "bash", "arguments": {"command": "ls"}}
    stream.feed(json.dumps({"type": "tool.execution_start", "data": start}))
    assert stream.result().tool_calls[0].name == "bash"


def test_mcp_config_names_only_the_butlers_server(tmp_path: Path) -> None:
    argv = build_argv(invocation(tmp_path), "copilot")
    config = json.loads(argv[argv.index("--additional-mcp-config") + 1])
    assert config == {
        "mcpServers": {
            "health": {
                "type": "http",
                "url": "http://127.0.0.1:8001/mcp?session=s",
                "headers": {"X-Butler-Session": "s"},
                "tools": ["*"],
            }
        }
    }
    assert "--disable-builtin-mcps" in argv and "--no-custom-instructions" in argv
    assert argv[argv.index("--usage-output-file") + 1] == str(
        tmp_path / "work" / "copilot-usage.json"
    )


def test_argv_carries_model_resume_and_the_owners_args_last(tmp_path: Path) -> None:
    inv = invocation(tmp_path, model="gpt-5", resume="abc", args=("--log-level", "none"))
    argv = build_argv(inv, "copilot")
    assert argv[argv.index("--model") + 1] == "gpt-5"
    assert "--resume=abc" in argv and argv[-2:] == ["--log-level", "none"]
    assert not any("Check overdue tasks" in arg for arg in argv), "the prompt goes on stdin"


def test_environment_is_the_spawners_plus_a_private_copilot_home(tmp_path: Path) -> None:
    env = build_env(invocation(tmp_path))
    assert env["COPILOT_GITHUB_TOKEN"] == "t"
    assert env["COPILOT_HOME"] == str(tmp_path / "home" / ".copilot")
    assert not env["XDG_CACHE_HOME"].startswith(str(tmp_path / "home")), "cache is shared"


def test_runtime_config_reaches_the_command_and_user_servers_are_emptied(tmp_path: Path) -> None:
    config = RuntimeConfig(type="copilot", model="m1", args=["--experimental"])
    adapter = get_adapter("copilot", config)
    assert isinstance(adapter, CopilotAdapter)
    inv = invocation(tmp_path, model=config.model, args=tuple(config.args))
    command = adapter.command(inv, "/bin/copilot")
    assert command.argv[-1] == "--experimental" and "m1" in command.argv
    assert command.stdin is not None
    assert command.stdin.startswith("<system>\nYou are health.\n</system>")
    assert command.stdin.endswith("Check overdue tasks")
    user_servers = command.files[tmp_path / "home" / ".copilot" / "mcp-config.json"]
    assert json.loads(user_servers) == {"mcpServers": {}}


def test_every_path_is_allowed_only_inside_the_butlers_jail(tmp_path: Path) -> None:
    # A command naming /usr/bin/python3 is refused by Copilot's own guard headless;
    # in the jail the jail decides what a path reaches.
    assert "--allow-all-paths" not in build_argv(invocation(tmp_path), "copilot")
    jailed = build_argv(invocation(tmp_path, sandbox=object()), "copilot")
    assert "--allow-all-paths" in jailed and "--allow-all-tools" in jailed
