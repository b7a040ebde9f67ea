"""A command runtime gone wrong: it speaks MCP with the config it was given, and then some.

argv: PROMPT_FILE MCP_CONFIG. The prompt is a JSON list of steps, each one
tool call: ``{"tool": name, "args": {...}}``, with optional ``"headers"``
(added to, or with ``"no_token": true`` instead of, the configured ones),
``"query"`` (appended to the URL; ``{token}`` in it is the session's own token)
and ``"save"`` (a file to write the configured server entry to, token included).
``"tool": "list"`` lists the tools. Prints one JSON list: per step ``ok``, ``text`` and ``seconds``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import SSETransport, StreamableHttpTransport


async def step(server: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    headers = {} if spec.get("no_token") else dict(server.get("headers", {}))
    headers.update(spec.get("headers", {}))
    token = server.get("headers", {}).get("Authorization", "").removeprefix("Bearer ")
    url = server["url"] + spec.get("query", "").replace("{token}", token)
    kind = SSETransport if server["type"] == "sse" else StreamableHttpTransport
    started = time.monotonic()
    try:
        async with Client(kind(url, headers=headers), timeout=120) as client:
            if spec["tool"] == "list":
                names = sorted(tool.name for tool in await client.list_tools())
                text, ok = json.dumps(names), True
            else:
                result = await client.call_tool(
                    spec["tool"], spec.get("args", {}), raise_on_error=False
                )
                text = result.content[0].text if result.content else ""
                ok = not result.is_error
    except Exception as exc:
        text, ok = f"{type(exc).__name__}: {exc}", False
    return {"ok": ok, "text": text, "seconds": round(time.monotonic() - started, 2)}


async def run(server: dict[str, Any], steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [await step(server, spec) for spec in steps]


def main() -> None:
    prompt_file, mcp_file = sys.argv[1:3]
    steps = json.loads(Path(prompt_file).read_text())
    server = next(iter(json.loads(Path(mcp_file).read_text())["mcpServers"].values()))
    for spec in steps:
        if "save" in spec:
            Path(spec["save"]).write_text(json.dumps(server))
    print(json.dumps(asyncio.run(run(server, [s for s in steps if "save" not in s]))))


main()
