#!/usr/bin/python3
"""A no-op Claude CLI (the SDK's stream-json protocol) that looks around its jail first.

Written for the warm-jail tests: before answering it records, in
``probe-<prompt>.json`` in its working directory (the butler folder), its
environment, what its home and workspace hold, and what the jail's proxy
answered when asked for a host nobody allowed; then it leaves a file named
for its prompt in its home and in its workspace, for the next session to
(not) find. ``MODE:hang`` in the prompt hangs after its first answer.
"""

import json
import os
import socket
import sys
import time


def emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def proxy_answer() -> str:
    """The first line the proxy gives a CONNECT to a host no setting allows."""
    url = os.environ.get("HTTPS_PROXY", "")
    port = int(url.rsplit(":", 1)[1]) if url else 0
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
            conn.sendall(b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
            return conn.recv(200).split(b"\r\n")[0].decode()
    except OSError as exc:
        return f"error: {exc}"


def look(prompt: str, workdir: str) -> None:
    name = prompt.split()[0]
    home = os.environ["HOME"]
    seen = {
        "env": dict(os.environ),
        "home": sorted(os.listdir(home)),
        "workdir": workdir,
        "workspace": sorted(os.listdir(workdir)),
        "proxy": proxy_answer(),
    }
    with open(f"probe-{name}.json", "w") as out:
        json.dump(seen, out)
    for folder in (home, workdir):
        with open(os.path.join(folder, f"left-by-{name}"), "w") as out:
            out.write("secret of " + name)


def main() -> int:
    prompt_file = sys.argv[sys.argv.index("--system-prompt-file") + 1]
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("type") == "control_request":
            response = {"subtype": "success", "request_id": msg["request_id"], "response": {}}
            emit({"type": "control_response", "response": response})
        elif msg.get("type") == "user":
            prompt = msg["message"]["content"]
            look(prompt, os.path.dirname(prompt_file))
            emit({"type": "system", "subtype": "init", "session_id": "s", "model": "fake"})
            if "MODE:hang" in prompt:
                emit(
                    {
                        "type": "assistant",
                        "message": {
                            "id": "m",
                            "type": "message",
                            "role": "assistant",
                            "model": "fake",
                            "content": [{"type": "text", "text": "partial"}],
                        },
                    }
                )
                while True:
                    time.sleep(1)
            emit(
                {
                    "type": "result",
                    "subtype": "success",
                    "is_error": False,
                    "result": "done",
                    "session_id": "s",
                    "duration_ms": 1,
                    "duration_api_ms": 1,
                    "num_turns": 1,
                    "total_cost_usd": 0.0,
                    "usage": {"input_tokens": 1, "output_tokens": 1},
                }
            )
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
