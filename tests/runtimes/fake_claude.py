#!/usr/bin/python3
"""A fake Claude Code CLI speaking the real stream-json protocol, for error paths.

claude-agent-sdk drives it exactly like the real CLI. The behaviour is chosen
by the prompt text ("MODE:hang", "MODE:crash", ...) because the launcher
strips every undeclared environment variable. It records its argv and
environment in ``fake_claude_run.json`` in its working directory.
"""

import json
import os
import subprocess
import sys
import time
import uuid

SESSION = str(uuid.uuid4())


def emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def assistant(content: list) -> dict:
    return {
        "type": "assistant",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "fake",
            "content": content,
            "stop_reason": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        },
        "parent_tool_use_id": None,
        "session_id": SESSION,
    }


def result(subtype: str, text: str | None, is_error: bool = False) -> dict:
    return {
        "type": "result",
        "subtype": subtype,
        "is_error": is_error,
        "num_turns": 2,
        "duration_ms": 5,
        "duration_api_ms": 3,
        "session_id": SESSION,
        "total_cost_usd": 0.0042,
        "result": text,
        "usage": {
            "input_tokens": 120,
            "output_tokens": 30,
            "cache_read_input_tokens": 10,
            "cache_creation_input_tokens": 5,
        },
    }


def run(prompt: str) -> int:
    mode = prompt.split("MODE:", 1)[1].split()[0] if "MODE:" in prompt else "ok"
    emit(
        {
            "type": "system",
            "subtype": "init",
            "session_id": SESSION,
            "cwd": os.getcwd(),
            "tools": [],
            "mcp_servers": [],
            "model": "fake",
        }
    )
    if mode == "hang":
        # A grandchild too: the whole process group must go on timeout.
        child = subprocess.Popen(["sleep", "1000"])
        with open("fake_claude_child.pid", "w") as fh:
            fh.write(str(child.pid))
        emit(assistant([{"type": "text", "text": "partial before hang"}]))
        while True:
            time.sleep(1)
    if mode == "crash":
        emit(assistant([{"type": "text", "text": "partial before crash"}]))
        sys.stderr.write("boom: the fake CLI crashed\n")
        sys.stderr.flush()
        return 3
    if mode == "garbage":
        sys.stdout.write("this is not json {{{\n")
        sys.stdout.flush()
        return 0
    if mode == "max_turns":
        emit(assistant([{"type": "text", "text": "still working"}]))
        emit(result("error_max_turns", None, is_error=True))
        return 1
    emit(
        assistant(
            [
                {"type": "text", "text": "Working on it."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "mcp__tester__state_get",
                    "input": {"key": "tasks"},
                },
            ]
        )
    )
    emit(result("success", "Done. 3 tasks checked."))
    return 0


def main() -> int:
    with open("fake_claude_run.json", "w") as fh:
        json.dump(
            {"argv": sys.argv, "env": dict(os.environ), "pid": os.getpid(), "pgid": os.getpgid(0)},
            fh,
        )
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("type") == "control_request":
            emit(
                {
                    "type": "control_response",
                    "response": {
                        "subtype": "success",
                        "request_id": msg["request_id"],
                        "response": {},
                    },
                }
            )
        elif msg.get("type") == "user":
            code = run(msg["message"]["content"])
            emit(
                {
                    "type": "system",
                    "subtype": "session_state_changed",
                    "state": "idle",
                    "session_id": SESSION,
                }
            )
            if code:
                return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
