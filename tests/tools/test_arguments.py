"""Every tool argument is bounded where it arrives; a refusal is one line naming it."""

from __future__ import annotations

import pytest
from fastmcp import Client

from tests.fakes.runtime import FakeAdapter

BIG_KEY = "k" * 100_000


def deep(levels: int) -> object:
    value: object = 1
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("trigger", {"prompt": "x", "timeout_s": 1e308}, "timeout_s: expected at most 600"),
        ("trigger", {"prompt": "x", "timeout_s": 0}, "timeout_s: expected more than 0.0, found 0"),
        ("trigger", {"prompt": "x", "timeout_s": -1}, "timeout_s: expected more than 0"),
        ("trigger", {"prompt": "x", "max_turns": -1}, "max_turns: expected at least 1"),
        ("trigger", {"prompt": "x", "max_turns": 0}, "max_turns: expected at least 1, found 0"),
        ("trigger", {"prompt": "x", "max_turns": 10**30}, "max_turns: expected at most 1000"),
        ("trigger", {"prompt": ""}, "prompt: string should have at least 1 character"),
        ("trigger", {"prompt": "  \n\t"}, "prompt: expected non-blank text"),
        ("trigger", {"prompt": "a\x00b"}, "prompt: expected text without NUL"),
        ("trigger", {"prompt": "x", "context": "c\x00"}, "context: expected text without NUL"),
        ("trigger", {"prompt": "é" * 700_000}, "prompt: expected at most 1048576 bytes"),
        ("session_start", {"prompt": " "}, "prompt: expected non-blank text"),
        ("session_start", {"prompt": "x", "dedupe_key": "d\x00"}, "dedupe_key: expected text"),
        ("session_start", {"prompt": "x", "dedupe_key": ""}, "dedupe_key: string should have"),
        ("session_start", {"prompt": "x", "metadata": {"a": "\x00"}}, "metadata: expected JSON"),
        ("session_start", {"prompt": "x", "metadata": {"a": deep(20)}}, "nested deeper than 16"),
        ("session_start", {"prompt": "x", "timeout_s": 601}, "timeout_s: expected at most 600"),
        ("session_resume", {"session_id": "s", "prompt": ""}, "prompt: string should have"),
        ("state_set", {"key": "", "value": 1}, "key: string should have at least 1 character"),
        ("state_set", {"key": "a\x00", "value": 1}, "key: expected text without NUL"),
        ("state_set", {"key": BIG_KEY, "value": 1}, "key: string should have at most 512"),
        ("state_set", {"key": "k", "value": "v\x00"}, "value: expected JSON at most 32 levels"),
        ("state_set", {"key": "k", "value": deep(40)}, "nested deeper than 32 levels"),
        ("state_get", {"key": BIG_KEY}, "key: string should have at most 512"),
        ("state_delete", {"key": ""}, "key: string should have at least 1"),
        ("session_list", {"limit": -1}, "limit: expected at least 1, found -1"),
        ("session_list", {"limit": 0}, "limit: expected at least 1, found 0"),
        ("session_list", {"limit": 1001}, "limit: expected at most 1000"),
        ("session_list", {"status": "bogus"}, "status: expected 'pending', 'running'"),
        ("builder_spawn", {"repo": "/tmp/r\x00"}, "repo: expected text without NUL"),
        ("builder_spawn", {"repo": "/tmp", "task": "t\x00"}, "task: expected text without NUL"),
        ("builder_spawn", {"repo": "/tmp", "files": ["a\x00"]}, "files.0: expected text"),
        ("builder_spawn", {"repo": "/tmp", "args": {"a": deep(20)}}, "args: expected JSON"),
    ],
)
async def test_a_bad_argument_is_refused_in_one_line(butler_mcp, tool, arguments, expected):
    adapter = FakeAdapter()
    async with Client(butler_mcp(adapter)) as client:
        result = await client.call_tool(tool, arguments, raise_on_error=False)
    assert result.is_error
    line = result.content[0].text
    assert "\n" not in line and len(line) < 400, line
    assert line.startswith(f"{tool}: argument "), line
    assert expected in line, line
    assert adapter.invocations == []  # nothing ran


async def test_the_schema_shows_the_bounds(butler_mcp):
    async with Client(butler_mcp()) as client:
        tools = {t.name: t.input_schema["properties"] for t in await client.list_tools()}
    timeout = tools["trigger"]["timeout_s"]["anyOf"][0]
    assert timeout["exclusiveMinimum"] == 0 and timeout["maximum"] == 600
    turns = tools["trigger"]["max_turns"]["anyOf"][0]
    assert (turns["minimum"], turns["maximum"]) == (1, 1000)
    assert tools["trigger"]["prompt"]["minLength"] == 1
    assert tools["state_set"]["key"]["maxLength"] == 512
    assert (
        tools["session_list"]["limit"]["minimum"],
        tools["session_list"]["limit"]["maximum"],
    ) == (
        1,
        1000,
    )
    assert "bogus" not in str(tools["session_list"]["status"])
    assert "cancelled" in str(tools["session_list"]["status"])


async def test_good_arguments_at_the_bounds_still_run(butler_mcp):
    adapter = FakeAdapter()
    async with Client(butler_mcp(adapter)) as client:
        result = await client.call_tool(
            "trigger", {"prompt": "x", "timeout_s": 600, "max_turns": 1000}
        )
        assert result.structured_content["success"] is True
        await client.call_tool("state_set", {"key": "k" * 512, "value": deep(31)})
        listed = await client.call_tool("session_list", {"limit": 1, "status": "succeeded"})
    assert (adapter.invocations[0].timeout_s, adapter.invocations[0].max_turns) == (600, 1000)
    assert len(listed.structured_content["result"]) == 1
