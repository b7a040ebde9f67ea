"""A ``command`` runtime that tries to break out of its jail and reports what it could do.

Run as ``python3 -I probe.py PROMPT_FILE MCP_CONFIG``; the prompt is a JSON
object naming what to try (paths to write, the daemon's pid, a host to
reach...). It prints one JSON object on stdout. Standard library only: it
runs inside the jail, where no butler code is.
"""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request


def try_write(path: str) -> str:
    try:
        with open(path, "a", encoding="utf-8") as out:
            out.write("JAILBREAK\n")
    except OSError as exc:
        return type(exc).__name__
    return "written"


def try_plant(path: str, text: str, mode: int) -> str:
    """Put a file of the runtime's choosing at ``path`` (replacing what is there)."""
    try:
        if os.path.lexists(path) and not os.path.isdir(path):
            os.unlink(path)
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(path, mode)
    except OSError as exc:
        return type(exc).__name__
    return "written"


def try_append(path: str, text: str) -> str:
    try:
        with open(path, "a", encoding="utf-8") as out:
            out.write(text)
    except OSError as exc:
        return type(exc).__name__
    return "written"


def try_symlink(target: str, path: str) -> str:
    """Replace ``path`` with a link to ``target`` (which need not exist in the jail)."""
    try:
        if os.path.lexists(path):
            os.unlink(path)
        os.symlink(target, path)
    except OSError as exc:
        return type(exc).__name__
    return "linked"


def try_connect(host: str, port: int) -> str:
    try:
        with socket.create_connection((host, port), timeout=3):
            return "connected"
    except OSError as exc:
        return type(exc).__name__


def try_unix(path: str) -> str:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError as exc:
        return type(exc).__name__
    finally:
        sock.close()
    return "connected"


def environs(canary: str) -> dict:
    readable, leaked, pids = [], [], []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pids.append(int(name))
        try:
            with open(f"/proc/{name}/environ", "rb") as env:
                data = env.read()
        except OSError:
            continue
        readable.append(int(name))
        if canary.encode() in data:
            leaked.append(int(name))
    return {"pids": sorted(pids), "environ_readable": readable, "canary_in": leaked}


def resolve(name: str) -> str:
    try:
        socket.getaddrinfo(name, 80)
    except OSError as exc:
        return type(exc).__name__
    return "resolved"


def fetch(url: str) -> str:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler())
    try:
        with opener.open(url, timeout=10) as response:
            return f"{response.status}"
    except urllib.error.HTTPError as exc:
        return f"{exc.code} {exc.read().decode(errors='replace').strip()}"
    except OSError as exc:
        return type(exc).__name__


def mcp_call(config_path: str, tool: str, arguments: dict, timeout: float = 10) -> str:
    """One tool call over streamable HTTP, as any MCP client would make it."""
    with open(config_path, encoding="utf-8") as f:
        server = next(iter(json.load(f)["mcpServers"].values()))
    headers = {
        **server.get("headers", {}),
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def post(message: dict, session: str | None) -> tuple[str | None, str]:
        extra = {"mcp-session-id": session} if session else {}
        request = urllib.request.Request(
            server["url"], json.dumps(message).encode(), {**headers, **extra}, method="POST"
        )
        with opener.open(request, timeout=timeout) as response:
            return response.headers.get("mcp-session-id"), response.read().decode()

    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"},
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
    _, body = post(call, session)
    return body


def setsid_child(marker: str) -> None:
    """A grandchild that leaves the process group and would outlive a plain group kill."""
    code = (
        "import os,time\nos.setsid()\n"
        f"open({marker!r},'w').write(str(os.getpid()))\ntime.sleep(600)"
    )
    subprocess.Popen(
        [sys.executable, "-I", "-c", code],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def main() -> None:
    # A headless builder's prompt is its context, a blank line, then the task: the plan.
    text = open(sys.argv[1], encoding="utf-8").read()
    plan = json.loads(text.rsplit("\n\n", 1)[-1])
    report: dict = {"uid": os.getuid(), "prompt": text}
    if len(sys.argv) > 3:  # given the system prompt's file: what the session was told
        report["system"] = open(sys.argv[3], encoding="utf-8").read()
    report["planted"] = {
        path: try_plant(path, body, mode) for path, body, mode in plan.get("plant", [])
    }
    report["appended"] = {path: try_append(path, body) for path, body in plan.get("append", [])}
    report["linked"] = {path: try_symlink(target, path) for target, path in plan.get("symlink", [])}
    if "canary" in plan:
        report.update(environs(plan["canary"]))
    if "daemon_pid" in plan:
        try:
            os.kill(plan["daemon_pid"], 0)
            report["daemon"] = "visible"
        except OSError as exc:
            report["daemon"] = type(exc).__name__
    report["writes"] = {path: try_write(path) for path in plan.get("write", [])}
    report["tcp"] = {f"{h}:{p}": try_connect(h, p) for h, p in plan.get("tcp", [])}
    report["unix"] = {path: try_unix(path) for path in plan.get("unix", [])}
    report["resolve"] = {name: resolve(name) for name in plan.get("resolve", [])}
    report["fetch"] = {url: fetch(url) for url in plan.get("fetch", [])}
    if "mcp" in plan:
        report["mcp"] = mcp_call(sys.argv[2], plan["mcp"]["tool"], plan["mcp"]["arguments"])
    if "setsid" in plan:
        setsid_child(plan["setsid"])
        deadline = time.monotonic() + 10
        while not os.path.exists(plan["setsid"]) and time.monotonic() < deadline:
            time.sleep(0.02)
        print("grandchild started", flush=True)
        time.sleep(600)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
