#!/usr/bin/python3
"""A no-op Claude CLI in print mode: the predecessor's shape (``claude -p --output-format
stream-json ... PROMPT``), the prompt on the command line, no stdin protocol.

It prints what ``tests/runtimes/fake_claude.py`` prints for a prompt (the
init line, one assistant message, the result) and exits, on the same
interpreter with the same imports, so that beside that CLI the only
difference is the SDK's stream-json protocol on stdin: the second floor of
``benchmarks/spawner.py``.
"""

import json
import os
import subprocess  # noqa: F401 (imported as fake_claude.py does: the same start-up)
import sys
import time  # noqa: F401
import uuid

SESSION = str(uuid.uuid4())


def emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")


def main() -> int:
    emit({"type": "system", "subtype": "init", "session_id": SESSION, "cwd": os.getcwd()})
    text = {"type": "text", "text": "Done. 3 tasks checked."}
    message = {"role": "assistant", "content": [text], "usage": {"input_tokens": 1}}
    emit({"type": "assistant", "message": message, "session_id": SESSION})
    usage = {"input_tokens": 120, "output_tokens": 30}
    result = {"type": "result", "subtype": "success", "is_error": False, "result": text["text"]}
    emit({**result, "session_id": SESSION, "total_cost_usd": 0.0042, "usage": usage})
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
