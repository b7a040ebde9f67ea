"""A sender's session's tools: its share of the state, and which tools it may call at all."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from butler.tools.tenancy import TENANT_TOOLS, TenantState

TOOLS = Path(__file__).resolve().parents[3] / "butler" / "tools"


class Store:
    """The state store's interface over a dict."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    async def get(self, key: str) -> Any:
        return self.values.get(key)

    async def get_versioned(self, key: str) -> tuple[Any, int]:
        return self.values.get(key), int(key in self.values)

    async def set(self, key: str, value: Any, if_version: int | None = None) -> int:
        self.values[key] = value
        return 1

    async def list(self, prefix: str = "") -> dict[str, Any]:
        return {k: v for k, v in self.values.items() if k.startswith(prefix)}

    async def delete(self, key: str) -> bool:
        return self.values.pop(key, None) is not None


async def test_a_tenant_reads_and_writes_its_own_keys_and_never_sees_the_prefix():
    store = Store()
    store.values = {"meds": "owner's", "tenant/conversation-b/codes": "Bob's"}
    alice = TenantState(store, "tenant/conversation-a/")  # type: ignore[arg-type]
    await alice.set("notes", "Alice's")
    assert await alice.list() == {"notes": "Alice's"}
    assert await alice.get("meds") is None and await alice.get("../conversation-b/codes") is None
    assert await alice.delete("notes") and store.values == {
        "meds": "owner's",
        "tenant/conversation-b/codes": "Bob's",
    }


def registered() -> set[str]:
    """Every tool the butler registers (the functions decorated ``@mcp.tool``)."""
    found = set()
    for path in TOOLS.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.AsyncFunctionDef | ast.FunctionDef) and any(
                ast.unparse(d) == "mcp.tool" for d in node.decorator_list
            ):
                found.add(node.name)
    return found


def test_a_senders_session_may_call_no_builder_or_schedule_tool():
    tools = registered()
    assert TENANT_TOOLS <= tools  # each one named is a real tool
    owners = tools - TENANT_TOOLS
    assert {"builder_spawn", "builder_get", "builder_list", "schedule_run", "tick"} <= owners
