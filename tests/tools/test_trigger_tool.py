"""The ``trigger`` MCP tool, through a real MCP client against the butler's server."""

from __future__ import annotations

from fastmcp import Client

from tests.fakes.runtime import FakeAdapter, failing


async def test_trigger_with_prompt_only_returns_a_spawner_result(butler_mcp):
    async with Client(butler_mcp()) as client:
        result = (await client.call_tool("trigger", {"prompt": "Summarize today"})).data
    assert result.success is True and result.error is None
    assert result.output == "echo: Summarize today"
    assert result.tool_calls[0]["name"] == "state_get"
    assert result.session_id and result.duration_ms is not None


async def test_trigger_with_context_includes_it(butler_mcp):
    adapter = FakeAdapter()
    async with Client(butler_mcp(adapter)) as client:
        await client.call_tool("trigger", {"prompt": "Process this", "context": "User sent: hello"})
    assert adapter.invocations[0].prompt == "User sent: hello\n\nProcess this"


async def test_trigger_failure_returns_error_and_partial_output(butler_mcp):
    async with Client(butler_mcp(FakeAdapter(script=failing))) as client:
        result = (await client.call_tool("trigger", {"prompt": "x"})).data
    assert result.success is False and result.error == "Connection refused"
    assert result.output == "partial words"


async def test_progress_notifications_reach_a_caller_that_asked(butler_mcp):
    seen: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    async with Client(butler_mcp()) as client:
        await client.call_tool("trigger", {"prompt": "x"}, progress_handler=on_progress)
    assert seen[:2] == ["queued", "running"]


async def test_session_tools_read_the_record(butler_mcp):
    async with Client(butler_mcp()) as client:
        result = (await client.call_tool("trigger", {"prompt": "remember"})).data
        row = await client.call_tool("session_get", {"session_id": result.session_id})
        listed = (await client.call_tool("session_list", {"limit": 5})).structured_content
        missing = await client.call_tool(
            "session_get",
            {"session_id": "00000000-0000-0000-0000-000000000000"},
            raise_on_error=False,
        )
    assert row.structured_content["prompt"] == "remember"
    assert listed["result"][0]["id"] == result.session_id
    assert missing.is_error and "not found" in missing.content[0].text
