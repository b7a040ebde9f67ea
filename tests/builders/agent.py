"""A small interactive agent CLI for builder tests (the ``command`` runtime).

Interactive (``--prompt-file``): prints what it was given, then a prompt line,
and answers lines until ``exit`` (status 0) or ``fail`` (status 3); ``child`` starts a
child process and prints its pid; ``call VALUE`` calls the butler's ``state_set``. With
``--once`` it answers its prompt and exits, like a headless runtime. Standard
library only.
"""

import json
import os
import pathlib
import subprocess
import sys
import urllib.error
import urllib.request


def value(flag: str) -> str:
    args = sys.argv[1:]
    return args[args.index(flag) + 1]


def post(url: str, headers: dict, body: dict) -> tuple[int, dict, str]:
    """One JSON-RPC POST to a streamable-HTTP MCP server: status, headers, body text."""
    request = urllib.request.Request(url, json.dumps(body).encode(), method="POST")
    for name, text in {**headers, "Content-Type": "application/json",
                       "Accept": "application/json, text/event-stream"}.items():  # fmt: skip
        request.add_header(name, text)
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), ""
    except OSError as exc:
        return 0, {}, str(exc)


def call_state_set(mcp: dict, value: str) -> str:
    """Call the butler's ``state_set`` as a runtime would (MCP over HTTP, its own token)."""
    (server,) = mcp["mcpServers"].values()
    url, headers = server["url"], dict(server.get("headers") or {})
    hello = {"protocolVersion": "2025-06-18", "capabilities": {},
             "clientInfo": {"name": "agent", "version": "1"}}  # fmt: skip
    status, got, _ = post(url, headers, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                         "params": hello})  # fmt: skip
    if status != 200:
        return f"CALL FAILED {status}"
    for name, text in got.items():
        if name.lower() == "mcp-session-id":
            headers["mcp-session-id"] = text
    post(url, headers, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    arguments = {"key": "agent/called", "value": value}
    status, _, text = post(url, headers, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                          "params": {"name": "state_set",
                                                     "arguments": arguments}})  # fmt: skip
    ok = status == 200 and '"isError":true' not in text.replace(" ", "")
    return f"CALLED<<{value}>>" if ok else f"CALL FAILED {status}"


def main() -> None:
    prompt = pathlib.Path(value("--prompt-file")).read_text()
    system = pathlib.Path(value("--system")).read_text()
    mcp = json.loads(pathlib.Path(value("--mcp")).read_text())
    seen = {
        "prompt": prompt,
        "system": system,
        "mcp": mcp,
        "env": sorted(os.environ),
        "cwd": os.getcwd(),
        "argv": sys.argv[1:],
    }
    if "--once" in sys.argv:
        print(json.dumps(seen))
        return
    # The private home the builder got: where a test reads what the agent saw.
    pathlib.Path(os.environ["HOME"], "seen.json").write_text(json.dumps(seen))
    print("AGENT READY")
    print(f"PROMPT<<{prompt}>>")
    print(f"SYSTEM<<{system.strip()}>>")
    print(f"CWD<<{os.getcwd()}>>")
    while True:
        try:
            line = input("agent> ")
        except EOFError:
            return
        if line == "exit":
            return
        if line == "fail":
            sys.exit(3)
        if line.startswith("call "):
            print(call_state_set(mcp, line.split(" ", 1)[1]))
            continue
        if line == "child":
            # A process of the runtime's own, as a TUI's shell command would start.
            child = subprocess.Popen(["sleep", "600"])
            print(f"CHILD<<{child.pid}>>")
            continue
        print(f"you said: {line}")


if __name__ == "__main__":
    main()
