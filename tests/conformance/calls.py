"""What a conformance test asks a butler, and what the fake model was asked."""

from __future__ import annotations

from typing import Any

from tests.conformance.conftest import Conformance
from tests.fakes.model_server import FakeModelServer
from tests.helpers import butler_client

#: Generous for a 2-core CI machine; a healthy session takes a few seconds.
SESSION_TIMEOUT_S = 90.0


async def state_get(butler: Conformance, key: str) -> Any:
    """The butler's state under ``key``, as a client reads it."""
    async with butler_client(f"{butler.url}/mcp", timeout=30) as client:
        result = await client.call_tool("state_get", {"key": key})
    if result.data is not None:
        return result.data
    return result.content[0].text if result.content else None


async def trigger(butler: Conformance, prompt: str, timeout_s: float = SESSION_TIMEOUT_S) -> dict:
    return await call(butler.url, "trigger", prompt=prompt, timeout_s=timeout_s)


async def session(butler: Conformance, session_id: str) -> dict:
    return await call(butler.url, "session_get", session_id=session_id)


def model_requests(fake_model: FakeModelServer) -> list[Any]:
    """Bodies of the requests that reached a model API (not 404s or model lists)."""
    return [r.body for r in fake_model.requests if r.api not in ("unknown", "models")]


async def call(url: str, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call one of the butler's MCP tools as an outside client does; its JSON result."""
    async with butler_client(f"{url}/mcp", timeout=SESSION_TIMEOUT_S + 60) as client:
        result = await client.call_tool(tool, arguments)
    assert result.structured_content is not None, result
    return result.structured_content
