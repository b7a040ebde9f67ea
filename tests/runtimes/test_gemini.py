"""The Gemini adapter's pure parts, on streams captured from the genuine CLI (0.61.0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from butler.config import RuntimeConfig
from butler.runtimes.base import Invocation, RuntimeFailure
from butler.runtimes.fold import Fold
from butler.runtimes.gemini import (
    GeminiAdapter,
    build_argv,
    build_env,
    build_settings,
    describe_exit,
    parse_event,
)
from butler.runtimes.registry import get_adapter
from tests.fakes.runtime import sample_invocation

CAPTURES = Path(__file__).parent / "captures"


def parse(name: str, server: str = "hub") -> Fold:
    stream = Fold(parse_event, server)
    for line in (CAPTURES / name).read_text().splitlines():
        stream.feed(line)
    return stream


def invocation(tmp_path: Path, **changes: object) -> Invocation:
    return sample_invocation(
        tmp_path,
        **{"env": {"PATH": "/usr/bin", "ANTHROPIC_API_KEY": "a", "GEMINI_API_KEY": "g"}, **changes},
    )


def test_a_captured_run_with_an_mcp_tool_call() -> None:
    result = parse("gemini_stream_json_mcp.jsonl").result()
    assert result.error is None
    assert result.output == "All done."
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("ping", {"text": "hello"})]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (300, 60)
    assert result.usage.cache_read_tokens == 30 and result.cost_usd is None
    assert result.runtime_session_id == "ec8edabc-822f-4f9e-91fb-71823862a827"


def test_a_captured_api_error_is_the_runtimes_own_message() -> None:
    result = parse("gemini_stream_json_error.jsonl").result()
    assert result.error is not None and "boom from fake" in result.error
    assert result.runtime_session_id


def test_a_captured_failed_tool_call_keeps_its_error() -> None:
    result = parse("gemini_stream_json_tool_error.jsonl").result()
    assert result.error is None and result.output == "Could not store it."
    [call] = result.tool_calls
    assert call.name == "state_set" and call.arguments == {"key": "k"}
    assert call.error == "params must have required property 'value'"


def test_tools_of_other_servers_keep_their_full_name() -> None:
    stream = Fold(parse_event, "health")
    stream.feed(json.dumps({"type": "tool_use", "tool_name": "run_shell_command", "tool_id": "1"}))
    assert stream.result().tool_calls[0].name == "run_shell_command"


def test_output_that_is_not_json_is_a_failure() -> None:
    stream = Fold(parse_event, "health")
    stream.feed("TypeError: Cannot read properties of undefined")
    assert "not JSON" in (stream.result().error or "")


def test_settings_keep_the_owners_and_hold_only_the_butlers_server(tmp_path: Path) -> None:
    owner = {
        "ui": {"theme": "dark"},
        "mcpServers": {"decoy": {"httpUrl": "http://evil/mcp"}},
        "telemetry": {"enabled": True, "target": "gcp"},
    }
    settings = build_settings(owner, invocation(tmp_path))
    assert settings["ui"] == {"theme": "dark"}
    assert settings["mcpServers"] == {
        "health": {
            "httpUrl": "http://127.0.0.1:8001/mcp?session=s",
            "headers": {"X-Butler-Session": "s"},
            "trust": True,
        }
    }
    assert settings["telemetry"] == {"enabled": False, "target": "gcp"}
    assert settings["privacy"]["usageStatisticsEnabled"] is False
    assert settings["general"]["enableAutoUpdate"] is False
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert settings["model"]["maxSessionTurns"] == 7
    assert "decoy" in owner["mcpServers"], "the owner's settings object is not modified"


def test_auth_type_follows_vertex_or_the_owners_choice(tmp_path: Path) -> None:
    vertex = invocation(tmp_path, env={"GOOGLE_GENAI_USE_VERTEXAI": "true"})
    assert build_settings({}, vertex)["security"]["auth"]["selectedType"] == "vertex-ai"
    owner = {"security": {"auth": {"selectedType": "oauth-personal"}}}
    chosen = build_settings(owner, invocation(tmp_path))
    assert chosen["security"]["auth"]["selectedType"] == "oauth-personal"


def test_environment_drops_the_anthropic_key_and_keeps_googles(tmp_path: Path) -> None:
    keys = {"PATH": "/bin", "ANTHROPIC_API_KEY": "a", "GOOGLE_API_KEY": "g"}
    inv = invocation(tmp_path, env=keys)
    env = build_env(inv, tmp_path / "system.md")
    assert "ANTHROPIC_API_KEY" not in env and env["GOOGLE_API_KEY"] == "g"
    assert env["GEMINI_CLI_HOME"] == env["HOME"] == str(tmp_path / "home")
    assert env["GEMINI_SYSTEM_MD"] == str(tmp_path / "system.md")


def test_argv_carries_model_resume_and_the_owners_args_last(tmp_path: Path) -> None:
    inv = invocation(tmp_path, model="gemini-2.5-pro", resume="abc", args=("--sandbox",))
    argv = build_argv(inv, "gemini")
    assert argv[argv.index("--model") + 1] == "gemini-2.5-pro"
    assert argv[argv.index("--resume") + 1] == "abc"
    assert argv[argv.index("--allowed-mcp-server-names") + 1] == "health"
    assert argv[-1] == "--sandbox"
    assert "Check overdue tasks" not in argv, "the prompt goes on stdin"
    assert argv[argv.index("--prompt") + 1] == ""


def test_runtime_config_reaches_the_command(tmp_path: Path) -> None:
    config = RuntimeConfig(type="gemini", model="m1", args=["--debug"])
    adapter = get_adapter("gemini", config)
    assert isinstance(adapter, GeminiAdapter)
    inv = invocation(tmp_path, model=config.model, args=tuple(config.args))
    command = adapter.command(inv, "/bin/gemini")
    assert command.argv[-1] == "--debug" and "m1" in command.argv
    assert command.stdin == "Check overdue tasks"
    assert command.files[tmp_path / "work" / "gemini-system.md"] == "You are health."
    settings = json.loads(command.files[tmp_path / "home" / ".gemini" / "settings.json"])
    assert list(settings["mcpServers"]) == ["health"]


def test_unreadable_seeded_settings_are_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "home" / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    adapter = GeminiAdapter(RuntimeConfig(type="gemini"))
    with pytest.raises(RuntimeFailure, match=r"settings.json: invalid JSON at line"):
        adapter.command(invocation(tmp_path), "/bin/gemini")


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (41, "authentication failed"),
        (53, "max turns reached"),
        (55, "not trusted"),
        (144, "HTTP 400"),
        (173, "HTTP 429"),
        (244, "HTTP 500"),
        (3, "exit status 3"),
    ],
)
def test_exit_codes_read_as_reasons(code: int, reason: str) -> None:
    assert reason in describe_exit(code)


def test_the_system_prompt_file_is_claude_md_first(tmp_path: Path) -> None:
    adapter = GeminiAdapter(RuntimeConfig(type="gemini"))
    (tmp_path / "GEMINI.md").write_text("gemini context")
    assert adapter.parse_system_prompt_file(tmp_path).name == "GEMINI.md"
    (tmp_path / "CLAUDE.md").write_text("system prompt")
    assert adapter.parse_system_prompt_file(tmp_path).name == "CLAUDE.md"


def test_model_retries_are_capped_unless_the_owner_asked_for_fewer(tmp_path: Path) -> None:
    # Gemini's default is 10 tries, 5 s to 30 s apart: minutes past a session's time limit.
    assert build_settings({}, invocation(tmp_path))["general"]["maxAttempts"] == 3
    many = build_settings({"general": {"maxAttempts": 10}}, invocation(tmp_path))
    assert many["general"]["maxAttempts"] == 3
    one = build_settings({"general": {"maxAttempts": 1}}, invocation(tmp_path))
    assert one["general"]["maxAttempts"] == 1
