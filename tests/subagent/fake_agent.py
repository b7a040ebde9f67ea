"""A stand-in agent CLI for the SubagentRunner tests: a real process doing real I/O.

    fake_agent.py report [ARGS...]     print a JSON report of what it was given
    fake_agent.py fail CODE MESSAGE    write MESSAGE to stderr, exit CODE
    fake_agent.py hang PIDFILE         start a grandchild, record both pids, wait forever
    fake_agent.py chat MARKER CODE     interactive: report, echo one stdin line, exit CODE
    fake_agent.py probe PLAN_FILE      try what PLAN_FILE (JSON) lists: reads, writes, URLs

The report says what an agent would see: its argv, cwd, the folder's entries
(symlinks with their targets), the MCP config files' contents, prompt.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

MCP_FILES = (".mcp.json", ".gemini/settings.json", ".cursor/mcp.json", "opencode.json", "mcp.json")


def report(argv: list[str]) -> dict[str, object]:
    cwd = Path.cwd()
    entries = {}
    for entry in sorted(cwd.iterdir()):
        if entry.is_symlink():
            entries[entry.name] = {"symlink": os.readlink(entry)}
        else:
            entries[entry.name] = {"dir": entry.is_dir()}
    mcp = {}
    for name in MCP_FILES:
        path = cwd / name
        mcp[name] = path.read_text(encoding="utf-8") if path.exists() else None
    prompt = cwd / "prompt.md"
    return {
        "argv": argv,
        "cwd": str(cwd),
        "entries": entries,
        "mcp": mcp,
        "prompt": prompt.read_text(encoding="utf-8") if prompt.exists() else None,
        "claudecode": os.environ.get("CLAUDECODE"),
        "stdin_tty": sys.stdin.isatty() if sys.stdin else None,
    }


def outcome(action) -> str:
    """What happened: the value, or the exception's class name."""
    try:
        return str(action())
    except Exception as exc:
        return type(exc).__name__


def fetch(url: str) -> str:
    """The status and first line of a GET through the environment's proxy settings."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return f"{answer.status} {answer.read(200).decode(errors='replace')}"
    except urllib.error.HTTPError as exc:
        return f"{exc.code} {exc.read(200).decode(errors='replace')}"


def write(path: str) -> str:
    Path(path).write_text("JAILBREAK\n", encoding="utf-8")
    return "written"


def probe(plan_file: str) -> dict[str, object]:
    plan = json.loads(Path(plan_file).read_text(encoding="utf-8"))
    return {
        "home": os.environ.get("HOME"),
        "read": {p: outcome(lambda p=p: Path(p).read_text()[:40]) for p in plan["read"]},
        "write": {p: outcome(lambda p=p: write(p)) for p in plan["write"]},
        "fetch": {u: outcome(lambda u=u: fetch(u)) for u in plan["fetch"]},
    }


def main() -> int:
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "probe":
        print(json.dumps(probe(args[0])))
        return 0
    if mode == "report":
        seen = report(args)
        seen["stdin"] = sys.stdin.read() if sys.stdin and not sys.stdin.isatty() else None
        print(json.dumps(seen))
        return 0
    if mode == "fail":
        sys.stderr.write(args[1] + "\n")
        print("partial output that is not an answer")
        return int(args[0])
    if mode == "hang":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        Path(args[0]).write_text(json.dumps([os.getpid(), child.pid]), encoding="utf-8")
        time.sleep(600)
        return 0
    if mode == "chat":
        print(json.dumps(report(args)), flush=True)
        print("chat: stderr is inherited", file=sys.stderr, flush=True)
        line = sys.stdin.readline().strip()
        print(f"chat: you said {line!r}", flush=True)
        # Proves the runner waited: this file appears only as the agent exits.
        time.sleep(0.2)
        Path(args[0]).write_text("exited", encoding="utf-8")
        return int(args[1])
    raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    sys.exit(main())
