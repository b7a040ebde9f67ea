"""The Codex adapter's pure parts: argv for one run, and the parser on real streams."""

from __future__ import annotations

import json
from pathlib import Path

from butler.config import RuntimeConfig
from butler.runtimes.base import Invocation, McpEndpoint
from butler.runtimes.codex import (
    CANNED_500,
    MCP_STARTUP_TIMEOUT_S,
    CodexAdapter,
    build_argv,
    embed_system_prompt,
    parse_event,
    retry_caps,
    unsupported_calls,
)
from butler.runtimes.fold import Fold
from tests.fakes.runtime import sample_invocation

CAPTURES = Path(__file__).resolve().parent / "captures"


def parse(lines: list[str], server: str = "hub") -> Fold:
    stream = Fold(parse_event, server)
    for line in lines:
        stream.feed(line)
    return stream


def test_parser_on_a_captured_mcp_run():
    result = parse((CAPTURES / "codex_exec_json_mcp.jsonl").read_text().splitlines()).result()
    assert result.error is None  # the "Model metadata" error item is not fatal
    assert result.output == "All done."
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("ping", {"text": "hello"})]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (200, 60)
    assert result.usage.cache_read_tokens == 40
    assert result.runtime_session_id == "01a21487-ec3d-7df1-aea5-0224c135b8f3"


def test_parser_on_a_captured_command_run_records_the_built_in_call():
    lines = (CAPTURES / "codex_exec_json_command.jsonl").read_text().splitlines()
    result = parse(lines).result()
    assert result.output == "All done."
    assert [c.to_json() for c in result.tool_calls] == [
        {
            "name": "command_execution",
            "arguments": {"command": "/bin/bash -lc 'echo hi'"},
            "id": "item_1",
            "source": "runtime",
        }
    ]


def test_a_failed_built_in_call_is_recorded_with_its_error():
    item = {"id": "i", "type": "command_execution", "command": "false", "exit_code": 1}
    stream = parse([json.dumps({"type": "item.completed", "item": item})])
    [call] = stream.result().tool_calls
    assert call.error == "command_execution failed (exit code 1)"


def test_usage_is_replaced_not_summed_across_turns():
    turn = {"type": "turn.completed", "usage": {"input_tokens": 100, "output_tokens": 10}}
    later = {"type": "turn.completed", "usage": {"input_tokens": 250, "output_tokens": 30}}
    result = parse([json.dumps(turn), json.dumps(later)]).result()
    assert (result.usage.input_tokens, result.usage.output_tokens) == (250, 30)


def test_turn_failed_and_garbage_are_failures():
    failed = {"type": "turn.failed", "error": {"message": "unexpected status 400: bad model"}}
    assert parse([json.dumps(failed)]).result().error == (
        "runtime error: unexpected status 400: bad model"
    )
    assert "not JSON" in parse(["Segmentation fault"]).result().error


def test_a_retry_codex_announces_is_not_a_failure_when_the_turn_then_completes():
    retry = {"type": "error", "message": "Reconnecting... 1/2 (stream disconnected)"}
    answer = {"type": "item.completed", "item": {"type": "agent_message", "text": "done"}}
    done = {"type": "turn.completed", "usage": {"input_tokens": 5, "output_tokens": 1}}
    result = parse([json.dumps(retry), json.dumps(answer), json.dumps(done)]).result()
    assert (result.error, result.output) == (None, "done")
    failed = {"type": "turn.failed", "error": {"message": "unexpected status 502: upstream"}}
    result = parse([json.dumps(retry), json.dumps(failed)]).result()
    assert result.error == "runtime error: unexpected status 502: upstream"
    fatal = {"type": "error", "message": "model not supported"}
    assert parse([json.dumps(fatal)]).result().error == "runtime error: model not supported"


def test_argv_locks_mcp_to_the_butler_and_hardens(tmp_path):
    invocation = Invocation(
        prompt="p",
        system_prompt="s",
        cwd=tmp_path,
        workdir=tmp_path,
        home=tmp_path,
        env={},
        mcp=McpEndpoint("health", "http://127.0.0.1:1/mcp?session=x", {"X-Butler-Session": "x"}),
        max_turns=5,
        timeout_s=10,
        model="gpt-x",
        args=("-c", "model_provider=fake"),
    )
    argv = build_argv(invocation, "codex")
    assert argv[:3] == ["codex", "exec", "--json"] and argv[-1] == "-"
    assert 'mcp_servers.health.url="http://127.0.0.1:1/mcp?session=x"' in argv
    assert 'mcp_servers.health.default_tools_approval_mode="approve"' in argv
    assert 'mcp_servers.health.http_headers={ "X-Butler-Session" = "x" }' in argv
    assert "--full-auto" not in argv and "analytics.enabled=false" in argv
    # A session's token goes through the environment, never the argv every user can read.
    secret = McpEndpoint("health", "http://127.0.0.1:1/mcp", {"Authorization": "Bearer tok-1"})
    with_token = Invocation(**{**invocation.__dict__, "mcp": secret})
    assert not any("tok-1" in a for a in build_argv(with_token, "codex"))
    assert 'mcp_servers.health.bearer_token_env_var="BUTLER_MCP_TOKEN"' in build_argv(
        with_token, "codex"
    )
    assert (
        CodexAdapter(RuntimeConfig(type="codex"))
        .command(with_token, "codex")
        .env["BUTLER_MCP_TOKEN"]
        == "tok-1"
    )
    assert argv[argv.index("-m") + 1] == "gpt-x" and "model_provider=fake" in argv
    resumed = build_argv(Invocation(**{**invocation.__dict__, "resume": "thread-1"}), "codex")
    assert resumed[:4] == ["codex", "exec", "resume", "--json"] and resumed[-2:] == [
        "thread-1",
        "-",
    ]
    assert embed_system_prompt("Be brief.", "Hi").startswith("<system>\nBe brief.\n</system>")


def test_the_owners_model_provider_gets_capped_retries_after_its_definition():
    table = 'model_providers.fake={name="fake", base_url="http://127.0.0.1:1/v1"}'
    args = ("-c", 'model_provider="fake"', "-c", table)
    caps = ["-c", "model_providers.fake.request_max_retries=2"]
    caps += ["-c", "model_providers.fake.stream_max_retries=2"]
    assert retry_caps(args) == caps
    argv = build_argv(sample_invocation(Path("/tmp/x"), args=args), "codex")
    # After the table, or the table's assignment would replace them.
    assert argv.index(caps[1]) > argv.index(table)
    # The owner's own retry setting wins; Codex refuses overrides of its built-in "openai".
    assert retry_caps((*args, "-c", "model_providers.fake.request_max_retries=9")) == []
    assert retry_caps(("-c", "model_provider=openai")) == [] and retry_caps(()) == []


def test_codex_words_for_an_http_500_are_explained():
    failed = {"type": "turn.failed", "error": {"message": CANNED_500}}
    error = parse([json.dumps(failed)]).result().error or ""
    assert error.startswith("runtime error: We’re currently") and "HTTP 500" in error


def test_codex_waits_for_the_butlers_server_and_fails_without_it(tmp_path):
    argv = build_argv(sample_invocation(tmp_path), "codex")
    assert "mcp_servers.health.required=true" in argv
    assert f"mcp_servers.health.startup_timeout_sec={MCP_STARTUP_TIMEOUT_S}" in argv


def test_codexs_own_sandbox_is_off_only_inside_the_butlers_jail(tmp_path):
    unjailed = build_argv(sample_invocation(tmp_path), "codex")
    assert 'sandbox_mode="danger-full-access"' not in unjailed
    jailed = sample_invocation(tmp_path, sandbox=object(), args=("-c", 'sandbox_mode="x"'))
    for resume in (None, "thread-1"):  # `exec resume` takes no -s: a config key works for both
        argv = build_argv(Invocation(**{**jailed.__dict__, "resume": resume}), "codex")
        # Before the owner's args, which may still choose otherwise.
        assert argv.index('sandbox_mode="danger-full-access"') < argv.index('sandbox_mode="x"')


#: What Codex 0.169 logs, and only logs, for a call to a tool it did not offer.
UNSUPPORTED_LOG = (
    "Reading additional input from stdin...\n"
    "2026-11-26T10:47:41.603038Z ERROR codex_core::tools::router: "
    "error=unsupported call: mcp__healthno_such_tool\n"
    "2026-11-26T10:47:41.7Z ERROR codex_core::tools::router: error=unsupported call: bogus\n"
)


def test_calls_to_tools_codex_never_offered_are_read_from_its_log():
    calls = [c.to_json() for c in unsupported_calls(UNSUPPORTED_LOG, "health")]
    assert calls == [
        {
            "name": "no_such_tool",
            "arguments": {},
            "error": "unsupported call: mcp__healthno_such_tool",
            "source": "runtime",
        },
        {"name": "bogus", "arguments": {}, "error": "unsupported call: bogus", "source": "runtime"},
    ]
    assert unsupported_calls("all fine\n", "health") == []
