"""A ``command`` runtime acting as an attacker inside its jail: runs the shell script and
the MCP tool calls its prompt's last paragraph (JSON) names, and prints what happened.

Started as ``python3 -I attacker.py {prompt_file} {mcp_config}``; stdlib only, beside
tests/sandbox/probe.py, whose MCP call it makes."""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -I leaves it out
from probe import mcp_call


def main() -> None:
    text = open(sys.argv[1], encoding="utf-8").read()
    plan = json.loads(text.rsplit("\n\n", 1)[-1])
    report: dict = {}
    if len(sys.argv) > 3:  # the system prompt the daemon composed for this session
        report["system"] = open(sys.argv[3], encoding="utf-8").read()
    if "sh" in plan:
        done = subprocess.run(["sh", "-c", plan["sh"]], capture_output=True, text=True)
        report["sh"] = {"rc": done.returncode, "out": done.stdout, "err": done.stderr[-2000:]}
    calls = plan.get("mcp", [])  # a headless builder's spawn waits for it to end
    report["mcp"] = [mcp_call(sys.argv[2], tool, args, timeout=300) for tool, args in calls]
    if "sh_after" in plan:
        done = subprocess.run(["sh", "-c", plan["sh_after"]], capture_output=True, text=True)
        report["sh_after"] = {"rc": done.returncode, "out": done.stdout, "err": done.stderr}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
