"""Butlers in one process (a roster under ``butler up``) share the parsing of their tools,
never their limits nor their state: each server describes, checks and runs its own."""

# No postponed annotations: FastMCP reads a tool's argument types at runtime.
import enum
import functools

from fastmcp import Client

from butler.adapters.fastmcp import ButlerMCP
from butler.context import ButlerContext
from butler.server import build_mcp
from butler.store.state import StateStore
from tests.fakes.runtime import FakeAdapter


def _butler(make_spawner, db, timeout_s: float) -> tuple[FakeAdapter, object]:
    adapter = FakeAdapter()
    spawner = make_spawner(adapter, runtime={"timeout_s": timeout_s})
    context = ButlerContext(
        config=spawner.config, db=db, state=StateStore(db), sessions=spawner.sessions,
        spawner=spawner,
    )  # fmt: skip
    return adapter, build_mcp(context)


async def _timeout_bound(mcp) -> float:
    async with Client(mcp) as client:
        (trigger,) = [t for t in await client.list_tools() if t.name == "trigger"]
    (bounded,) = [
        s for s in trigger.inputSchema["properties"]["timeout_s"]["anyOf"] if "maximum" in s
    ]
    return bounded["maximum"]


async def test_each_butler_in_one_process_describes_and_checks_its_own_limits(make_spawner, db):
    short, long, short_again = (
        _butler(make_spawner, db, timeout) for timeout in (100.0, 200.0, 100.0)
    )
    assert [await _timeout_bound(mcp) for _, mcp in (short, long, short_again)] == [100, 200, 100]
    async with Client(short[1]) as client:
        refused = await client.call_tool(
            "trigger", {"prompt": "hi", "timeout_s": 150}, raise_on_error=False
        )
    assert refused.is_error and short[0].invocations == []
    async with Client(long[1]) as client:
        answered = await client.call_tool("trigger", {"prompt": "hi", "timeout_s": 150})
    assert not answered.is_error and len(long[0].invocations) == 1


async def test_a_tool_shared_by_butlers_runs_the_butler_it_was_called_on(make_spawner, db):
    first, second = (_butler(make_spawner, db, 100.0) for _ in range(2))
    async with Client(second[1]) as client:
        await client.call_tool("trigger", {"prompt": "to the second"})
    assert [i.prompt for i in second[0].invocations] == ["to the second"]
    assert first[0].invocations == []


def _choices_tool(mcp, choices: list[str]) -> None:
    # An Enum made inside the registering function, as a butler's own choices would be:
    # its repr is the same in every butler, whatever members each one holds.
    Channel = enum.Enum("Channel", {c: c for c in choices})

    @mcp.tool
    async def send(channel: Channel) -> str:
        """Send on one of this butler's channels."""
        return channel.value


async def _advertised(mcp, tool: str) -> dict:
    async with Client(mcp) as client:
        (found,) = [t for t in await client.list_tools() if t.name == tool]
    return found.inputSchema


async def test_a_class_made_per_butler_is_never_taken_from_another_butlers_tool():
    first, second = ButlerMCP("first"), ButlerMCP("second")
    _choices_tool(first, ["mail", "sms"])
    _choices_tool(second, ["slack"])
    assert "'slack'" in repr(await _advertised(second, "send"))
    assert "'mail'" not in repr(await _advertised(second, "send"))
    async with Client(second) as client:
        sent = await client.call_tool("send", {"channel": "slack"})
    assert sent.data == "slack"


def _logged(fn):
    @functools.wraps(fn)
    async def wrapper(**kwargs):
        return await fn(**kwargs)

    return wrapper


async def test_tools_behind_one_decorator_keep_their_own_names():
    mcp = ButlerMCP("decorated")

    @mcp.tool
    @_logged
    async def first(key: str) -> str:
        """The first."""
        return "first"

    @mcp.tool
    @_logged
    async def second(key: str) -> str:
        """The second."""
        return "second"

    async with Client(mcp) as client:
        assert {t.name for t in await client.list_tools()} == {"first", "second"}
        assert (await client.call_tool("second", {"key": "k"})).data == "second"
