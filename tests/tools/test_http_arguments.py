"""Over real HTTP: raw JSON a typed client cannot send, and bodies over the transport's limit."""

from __future__ import annotations

import json

import httpx2
import pytest

from tests.helpers import TEST_TOKEN, butler_client

HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "authorization": f"Bearer {TEST_TOKEN}",
}


def _messages(response: httpx2.Response) -> list[dict]:
    if response.headers.get("content-type", "").startswith("application/json"):
        return [response.json()]
    return [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]


async def raw_tool_call(url: str, arguments_json: str) -> dict:
    """Initialise a session and send ``tools/call`` whose arguments are raw JSON text."""
    async with httpx2.AsyncClient(timeout=30) as client:
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        }
        first = await client.post(url, json=init, headers=HEADERS)
        headers = dict(HEADERS)
        if "mcp-session-id" in first.headers:
            headers["mcp-session-id"] = first.headers["mcp-session-id"]
        headers["mcp-protocol-version"] = _messages(first)[0]["result"]["protocolVersion"]
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await client.post(url, json=note, headers=headers)
        body = (
            '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": '
            f'{{"name": "state_set", "arguments": {arguments_json}}}}}'
        )
        answer = await client.post(url, content=body, headers=headers)
        return _messages(answer)[-1]


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", '{"n": NaN}'])
async def test_non_finite_state_values_in_raw_json_are_refused(served, value):
    url, butler = served
    reply = await raw_tool_call(url, f'{{"key": "k", "value": {value}}}')
    result = reply["result"]
    assert result["isError"] is True
    line = result["content"][0]["text"]
    assert line.startswith("state_set: argument value: expected JSON") and "\n" not in line
    assert "non-finite number" in line
    assert await butler.state.get("k") is None


async def test_a_body_over_the_limit_gets_a_json_rpc_error_naming_it(served):
    url, butler = served
    async with butler_client(url) as client:
        with pytest.raises(Exception) as raised:
            await client.call_tool("state_set", {"key": "big", "value": "x" * (5 * 1024 * 1024)})
        assert await client.call_tool("state_set", {"key": "small", "value": 1})
    message = str(raised.value)
    assert "over the 4194304-byte limit (4 MiB)" in message, message
    assert "Server returned an error response" not in message
    assert await butler.state.get("big") is None and await butler.state.get("small") == 1
