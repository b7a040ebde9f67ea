"""A ``command`` runtime for the worker tests: what a session on a worker can reach.

Run as ``python3 -I jail_probe.py PROMPT_FILE MCP_CONFIG SYSTEM_PROMPT_FILE`` inside
the jail on a worker, where no butler code is (standard library only). The
prompt's first line is a JSON plan: a tool of its butler to call, URLs to
fetch, files to read, seconds to sleep. Every request goes the way any HTTP
client in the jail goes: through the proxy the environment names (the jail
has no other way out). It prints one JSON object.
"""

import http.client
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

OPENER = urllib.request.build_opener(urllib.request.ProxyHandler())  # the environment's proxy


def fetch(url: str) -> str:
    try:
        with OPENER.open(url, timeout=10) as response:
            return f"{response.status} {response.read(200).decode(errors='replace')}"
    except urllib.error.HTTPError as exc:
        return f"{exc.code} {exc.read(300).decode(errors='replace').strip()}"
    except OSError as exc:
        return type(exc).__name__


def read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return "read: " + f.read(200)
    except OSError as exc:
        return type(exc).__name__


def mcp_call(config_path: str, tool: str, arguments: dict) -> str:
    """One tool call over streamable HTTP, as Claude Code's MCP client makes it: through
    the environment's proxy, on one connection kept alive (reopened if the far end closes
    it)."""
    with open(config_path, encoding="utf-8") as f:
        server = next(iter(json.load(f)["mcpServers"].values()))
    proxy = urllib.parse.urlsplit(os.environ["HTTP_PROXY"])
    connection = http.client.HTTPConnection(proxy.hostname, proxy.port, timeout=10)
    headers = {
        **server.get("headers", {}),
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Connection": "keep-alive",
    }

    def post(message: dict, session: str | None) -> tuple[str | None, str]:
        extra = {"mcp-session-id": session} if session else {}
        connection.request("POST", server["url"], json.dumps(message), {**headers, **extra})
        response = connection.getresponse()
        body = response.read().decode(errors="replace")
        if response.status >= 300:
            raise RuntimeError(f"{response.status} {body[:300]}")
        return response.getheader("mcp-session-id"), body

    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "worker-probe", "version": "1"},
        },
    }
    try:
        session, _ = post(init, None)
        post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        call = {"name": tool, "arguments": arguments}
        _, body = post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}, session)
    except (OSError, RuntimeError, http.client.HTTPException) as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        connection.close()
    return body


def attachments(prompt: str) -> dict:
    """What the files the prompt lists hold (lines ``- /path (note)``)."""
    listed = [line[2:].split(" (")[0] for line in prompt.splitlines() if line.startswith("- /")]
    return {os.path.basename(path): read(path) for path in listed}


def main() -> None:
    prompt = open(sys.argv[1], encoding="utf-8").read()
    plan = json.loads(prompt.splitlines()[0])
    report: dict = {"pid": os.getpid()}
    if "starts" in plan:  # one line per start of this runtime: a session run twice shows
        with open(plan["starts"], "a", encoding="utf-8") as out:
            out.write(f"{os.getpid()}\n")
    if "mcp" in plan:
        report["mcp"] = mcp_call(sys.argv[2], plan["mcp"]["tool"], plan["mcp"]["arguments"])
    report["fetch"] = {url: fetch(url) for url in plan.get("fetch", [])}
    report["read"] = {path: read(path) for path in plan.get("read", [])}
    report["files"] = attachments(prompt)
    if plan.get("system"):
        report["system"] = open(sys.argv[3], encoding="utf-8").read()
    if "sleep" in plan:
        print("sleeping", flush=True)
        time.sleep(plan["sleep"])
    if "done" in plan:  # the runtime has ended: what comes after is its worker's
        open(plan["done"], "w", encoding="utf-8").close()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
