"""FastMCP under butler/adapters/fastmcp.py: tools parsed once per process, and the input
schemas the MCP SDK checks a call against answered from the listing.

Each assumption of the adapter is asked of the installed FastMCP and SDK: a tool parsed
from one function and copied for another of the same shape is the tool FastMCP parses
from that other one (description, schemas) and runs it; the SDK takes a called tool's
input schema from the low-level server's lookup, running no listing for it.
"""

# No postponed annotations: FastMCP reads a tool's argument types at runtime.
import asyncio
import enum
import inspect
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import uvicorn
from fastmcp import Client, Context, FastMCP
from fastmcp.server.middleware import Middleware
from pydantic import Field

from butler.adapters.fastmcp import ButlerMCP, answer_input_schemas
from butler.adapters.uvicorn import Server


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


def tools_of(tag: str, bound: float) -> list[Any]:
    """A butler's tools, as butler makes them: closures over what is that butler's."""

    async def repeat(text: str, times: int = 2) -> str:
        """Repeat ``text``.

        A second paragraph, kept in the description.
        """
        return f"{tag}:{text * times}"

    async def wait(
        ctx: Context, seconds: Annotated[float | None, Field(gt=0, le=bound)] = None
    ) -> dict[str, Any]:
        """Wait at most this butler's bound."""
        return {"tag": tag, "context": isinstance(ctx, Context)}

    async def pick(colour: Colour) -> str:
        """Pick a colour."""
        return f"{tag}:{colour.value}"

    return [repeat, wait, pick]


def described(tool: Any) -> dict[str, Any]:
    return tool.to_mcp_tool(name=tool.name).model_dump(exclude_none=True)


async def test_a_tool_copied_for_another_function_of_its_shape_is_fastmcps_parse_of_it():
    butlers = [("first", 100.0), ("second", 100.0), ("third", 200.0)]
    expected = {}
    for tag, bound in butlers:
        plain = FastMCP(tag)  # FastMCP's own parse of each function
        for fn in tools_of(tag, bound):
            plain.tool(fn, description=inspect.getdoc(fn))
        for tool in await plain.list_tools():
            expected[tag, tool.name] = described(tool)
    servers = {}
    for tag, bound in butlers:
        servers[tag] = ButlerMCP(tag)
        for fn in tools_of(tag, bound):
            servers[tag].tool(fn)
    for tag, server in servers.items():
        for tool in await server.list_tools():
            assert described(tool) == expected[tag, tool.name], (tag, tool.name)
        async with Client(server) as client:
            repeated = await client.call_tool("repeat", {"text": "ab"})
            waited = await client.call_tool("wait", {"seconds": 1})
            picked = await client.call_tool("pick", {"colour": "blue"})
        assert (repeated.data, picked.data) == (f"{tag}:abab", f"{tag}:blue")
        assert waited.structured_content == {"tag": tag, "context": True}


class Listings(Middleware):
    """Counts the listings of tools the server runs."""

    def __init__(self) -> None:
        self.count = 0

    async def on_list_tools(self, context: Any, call_next: Any) -> Any:
        self.count += 1
        return await call_next(context)


class Asked(dict[str, Any]):
    """Input schemas by tool name, and the names they were asked for."""

    def __init__(self, **schemas: Any) -> None:
        super().__init__(schemas)
        self.asked: list[str] = []

    def get(self, name: str, default: Any = None) -> Any:
        self.asked.append(name)
        return super().get(name, default)


@asynccontextmanager
async def serving(mcp: FastMCP) -> AsyncIterator[str]:
    """``mcp`` over streamable HTTP on a free loopback port: its URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = Server(uvicorn.Config(mcp.http_app(path="/mcp"), log_config=None, lifespan="on"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            assert not task.done(), task
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    finally:
        server.stop(force=True)
        await task
        sock.close()


async def test_the_sdk_takes_a_called_tools_input_schema_from_the_lookup_and_lists_nothing():
    mcp = FastMCP("lookup")
    listings = Listings()
    mcp.add_middleware(listings)

    @mcp.tool
    async def echo(text: str) -> str:
        """Echo."""
        return text

    schemas = Asked(echo=(await mcp.get_tool("echo")).parameters)
    answer_input_schemas(mcp, schemas)
    async with serving(mcp) as url, Client(url) as client:
        assert (await client.call_tool("echo", {"text": "hi"})).data == "hi"
        before = listings.count
        for _ in range(3):
            await client.call_tool("echo", {"text": "again"})
    assert schemas.asked == ["echo"] * 4
    assert listings.count == before  # a call runs no listing through the server
