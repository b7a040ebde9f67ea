"""The OpenCode adapter's pure parts, on streams captured from the genuine CLI (1.18.33)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from butler.config import RuntimeConfig
from butler.runtimes.base import Invocation, RuntimeFailure
from butler.runtimes.fold import Fold
from butler.runtimes.opencode import (
    OpenCodeAdapter,
    build_argv,
    build_config,
    build_env,
    parse_event,
    read_owner_config,
)
from butler.runtimes.registry import get_adapter
from tests.fakes.runtime import sample_invocation

CAPTURES = Path(__file__).parent / "captures"


def parse(name: str, on_fatal=None) -> Fold:
    stream = Fold(parse_event, "hub", on_failure=on_fatal)
    for line in (CAPTURES / name).read_text().splitlines():
        stream.feed(line)
    return stream


def invocation(tmp_path: Path, **changes: object) -> Invocation:
    return sample_invocation(
        tmp_path, **{"env": {"PATH": "/usr/bin", "OPENROUTER_API_KEY": "o"}, **changes}
    )


def test_a_captured_run_with_an_mcp_tool_call() -> None:
    result = parse("opencode_run_json_mcp.jsonl").result()
    assert result.error is None
    assert result.output == "All done."
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("ping", {"text": "hello"})]
    # Usage is per step: two steps of 90 in / 20 out / 10 cached.
    assert (result.usage.input_tokens, result.usage.output_tokens) == (180, 40)
    assert result.usage.cache_read_tokens == 20
    assert result.cost_usd == 0.0 and result.num_turns == 2
    assert result.runtime_session_id == "ses_deb73dbfdffehiPyzjaN5qTo2M"


def test_a_captured_api_error_is_the_runtimes_own_message() -> None:
    result = parse("opencode_run_json_error.jsonl").result()
    assert result.error == "runtime error: APIError: Invalid API key (fake) (HTTP 400)"


def test_a_captured_failed_tool_call_keeps_its_error() -> None:
    [call] = parse("opencode_run_json_tool_error.jsonl").result().tool_calls
    assert call.name == "state_set" and call.arguments == {"key": "k"}
    assert call.error and "Missing required argument" in call.error


def test_an_unreadable_answer_ends_the_run_instead_of_looping() -> None:
    # OpenCode 1.18.33 retries an answer its provider SDK cannot read forever,
    # printing empty steps; the stream calls it a failure at the first one.
    stopped: list[bool] = []
    result = parse("opencode_run_json_garbage.jsonl", on_fatal=lambda: stopped.append(True))
    assert "could not be parsed" in (result.result().error or "")
    assert stopped


def test_config_holds_only_the_butlers_server_and_the_owners_providers(tmp_path: Path) -> None:
    owner = {
        "provider": {"openrouter": {"options": {"apiKey": "{env:OPENROUTER_API_KEY}"}}},
        "mcp": {"decoy": {"type": "remote", "url": "http://evil/mcp"}},
        "agent": {"butler": {"temperature": 0.2}, "plan": {"model": "x/y"}},
    }
    prompt = tmp_path / "system.md"
    config = build_config(owner, invocation(tmp_path, model="openrouter/m"), prompt)
    assert config["provider"] == owner["provider"]
    assert config["mcp"] == {
        "health": {
            "type": "remote",
            "url": "http://127.0.0.1:8001/mcp?session=s",
            "headers": {"X-Butler-Session": "s"},
            "enabled": True,
        }
    }
    assert config["agent"]["plan"] == {"model": "x/y"}
    assert config["agent"]["butler"] == {
        "temperature": 0.2,
        "prompt": "{file:" + str(prompt) + "}",
        "mode": "primary",
        "steps": 7,
    }
    assert config["model"] == "openrouter/m" and config["autoupdate"] is False
    assert "decoy" in owner["mcp"], "the owner's config object is not modified"


def test_environment_is_offline_private_and_lets_declared_variables_win(tmp_path: Path) -> None:
    inv = invocation(tmp_path, env={"PATH": "/bin", "npm_config_offline": "false"})
    env = build_env(inv, {"mcp": {}})
    assert env["npm_config_offline"] == "false", "a declared variable overrides a default"
    assert env["OPENCODE_DISABLE_PROJECT_CONFIG"] == "1"
    assert env["OPENCODE_DISABLE_MODELS_FETCH"] == "1"
    assert json.loads(env["OPENCODE_CONFIG_CONTENT"]) == {"mcp": {}}
    assert env["XDG_DATA_HOME"].startswith(str(tmp_path / "home"))
    assert env["XDG_CONFIG_HOME"].startswith(str(tmp_path / "work")), "no global config of home"


def test_argv_carries_agent_model_session_and_the_owners_args_last(tmp_path: Path) -> None:
    inv = invocation(tmp_path, model="p/m", resume="ses_1", args=("--log-level", "WARN"))
    argv = build_argv(inv, "opencode")
    assert argv[:4] == ["opencode", "run", "--format", "json"]
    assert argv[argv.index("--agent") + 1] == "butler"
    assert argv[argv.index("--model") + 1] == "p/m"
    assert argv[argv.index("--session") + 1] == "ses_1"
    assert "--title" in argv and argv[-2:] == ["--log-level", "WARN"]
    assert "Check overdue tasks" not in argv, "the prompt goes on stdin"


def test_runtime_config_and_the_owners_file_reach_the_command(tmp_path: Path) -> None:
    (tmp_path / "opencode.json").write_text(json.dumps({"provider": {"p": {}}}))
    config = RuntimeConfig(type="opencode", model="p/m", args=["--print-logs"])
    adapter = get_adapter("opencode", config)
    assert isinstance(adapter, OpenCodeAdapter)
    inv = invocation(tmp_path, model=config.model, args=tuple(config.args))
    command = adapter.command(inv, "/bin/opencode")
    assert command.argv[-1] == "--print-logs" and command.stdin == "Check overdue tasks"
    content = json.loads(command.env["OPENCODE_CONFIG_CONTENT"])
    assert content["provider"] == {"p": {}} and content["model"] == "p/m"
    assert command.files[tmp_path / "work" / "opencode-system.md"] == "You are health."


def test_a_broken_owner_config_is_one_clear_error(tmp_path: Path) -> None:
    assert read_owner_config(tmp_path) == {}
    (tmp_path / "opencode.json").write_text('{"provider": ')
    with pytest.raises(RuntimeFailure, match=r"opencode.json: invalid JSON at line"):
        read_owner_config(tmp_path)
    (tmp_path / "opencode.json").write_text("[]")
    with pytest.raises(
        RuntimeFailure, match="expected an OpenCode config object, found a JSON list"
    ):
        read_owner_config(tmp_path)


def test_a_call_to_a_tool_opencode_never_offered_is_recorded_by_its_name() -> None:
    # OpenCode runs its "invalid" tool in place of the call; its input names the real one.
    [call] = parse("opencode_run_json_unoffered_tool.jsonl").result().tool_calls
    assert (call.name, call.arguments) == ("no_such_tool", {})
    assert call.error and "unavailable tool 'hub_no_such_tool'" in call.error
