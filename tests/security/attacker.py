"""A ``command`` runtime acting as an attacker inside its jail: runs the shell script and
the MCP tool calls its prompt's last paragraph (JSON) names, and prints what happened.

Started as ``python3 -I attacker.py {prompt_file} {mcp_config}``; stdlib only."""

import json
import subprocess
import sys
import urllib.request


def mcp_call(config_path: str, tool: str, arguments: dict) -> str:
    """One tool call over streamable HTTP with the session's own token."""
    with open(config_path, encoding="utf-8") as f:
        server = next(iter(json.load(f)["mcpServers"].values()))
    headers = {
        **server.get("headers", {}),
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }

    def post(message: dict, session: str | None) -> tuple[str | None, str]:
        extra = {"mcp-session-id": session} if session else {}
        request = urllib.request.Request(
            server["url"], json.dumps(message).encode(), {**headers, **extra}, method="POST"
        )
        with urllib.request.urlopen(request, timeout=300) as response:
            return response.headers.get("mcp-session-id"), response.read().decode()

    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "attacker", "version": "1"},
        },
    }
    session, _ = post(init, None)
    post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    return post(call, session)[1]


def main() -> None:
    text = open(sys.argv[1], encoding="utf-8").read()
    plan = json.loads(text.rsplit("\n\n", 1)[-1])
    report: dict = {}
    if len(sys.argv) > 3:  # the system prompt the daemon composed for this session
        report["system"] = open(sys.argv[3], encoding="utf-8").read()
    if "sh" in plan:
        done = subprocess.run(["sh", "-c", plan["sh"]], capture_output=True, text=True)
        report["sh"] = {"rc": done.returncode, "out": done.stdout, "err": done.stderr[-2000:]}
    report["mcp"] = [mcp_call(sys.argv[2], tool, args) for tool, args in plan.get("mcp", [])]
    if "sh_after" in plan:
        done = subprocess.run(["sh", "-c", plan["sh_after"]], capture_output=True, text=True)
        report["sh_after"] = {"rc": done.returncode, "out": done.stdout, "err": done.stderr}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
