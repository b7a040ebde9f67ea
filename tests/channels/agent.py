"""A stand-in agent for the ``command`` runtime: it answers a channel's sessions predictably.

    agent.py BUTLER PROMPT_FILE

A classification prompt ("Choose which butler ...") is answered with the
butler whose description shares a word with the message, or "unsure". Any
other prompt is answered "BUTLER heard: <message>", followed by the text of
every attached file it was given and the earlier turns it was shown. A
message holding LONG gets a 9,000-character answer; FAIL makes it exit 1;
WAIT makes it wait until the file named by AGENT_GATE exists. Each ``SEND path``
calls the butler's ``send_file`` tool (as any MCP client would, with the session's
token from ``{mcp_config}``) and adds the tool's one-line answer.
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path


def classify(prompt: str) -> str:
    message = prompt.split("<message>", 1)[1].split("</message>", 1)[0].lower()
    words = set(re.findall(r"[a-z]{4,}", message))
    for name, description in re.findall(r"^- ([a-z-]+): (.*)$", prompt, re.M):
        if words & set(re.findall(r"[a-z]{4,}", description.lower())):
            return name
    return "unsure"


def send_file(config: str, path: str) -> str:
    """Call ``send_file(path)``; the tool's one line (an error's too)."""
    import asyncio
    import json

    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

    server = next(iter(json.loads(Path(config).read_text())["mcpServers"].values()))
    transport = StreamableHttpTransport(server["url"], headers=server.get("headers") or {})

    async def call() -> str:
        async with Client(transport, timeout=120) as client:
            arguments = {"path": path, "caption": f"{Path(path).name}, as asked"}
            result = await client.call_tool("send_file", arguments, raise_on_error=False)
            return result.content[0].text

    return asyncio.run(call())


def answer(butler: str, prompt: str, config: str | None = None) -> str:
    head, _, files = prompt.partition("Files that came with this message, for you to read:")
    message = head.rstrip().rsplit("\n\n", 1)[-1]
    if "WAIT" in message:
        gate = Path(os.environ["AGENT_GATE"])
        while not gate.exists():
            time.sleep(0.05)
    if "FAIL" in message:
        sys.exit("the agent was told to fail")
    lines = [f"{butler} heard: {message}"]
    if "Earlier in this conversation:" in head:
        earlier = head.split("Earlier in this conversation:", 1)[1].split("\n\n", 1)[0]
        lines.append(f"earlier turns: {len(earlier.strip().splitlines())}")
    for path in re.findall(r"^- (\S+)", files, re.M):
        lines.append(f"{Path(path).name} says: {Path(path).read_text(errors='replace').strip()}")
    for path in re.findall(r"\bSEND (\S+)", message):
        lines.append(send_file(config or "", path))
    if "LONG" in message:
        lines.append(("All work and no play makes a dull butler. " * 220).strip())
    return "\n".join(lines)


def main() -> None:
    butler, prompt_file = sys.argv[1], sys.argv[2]
    prompt = Path(prompt_file).read_text(encoding="utf-8")
    if "Choose which butler should answer" in prompt:
        print(classify(prompt))
    else:
        print(answer(butler, prompt, sys.argv[3] if len(sys.argv) > 3 else None))


if __name__ == "__main__":
    main()
