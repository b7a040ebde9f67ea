"""A small interactive agent CLI for builder tests (the ``command`` runtime).

Interactive (``--prompt-file``): prints what it was given, then a prompt line,
and answers lines until ``exit`` (status 0) or ``fail`` (status 3); ``child`` starts a
child process and prints its pid. With
``--once`` it answers its prompt and exits, like a headless runtime. Standard
library only.
"""

import json
import os
import pathlib
import subprocess
import sys


def value(flag: str) -> str:
    args = sys.argv[1:]
    return args[args.index(flag) + 1]


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
        if line == "child":
            # A process of the runtime's own, as a TUI's shell command would start.
            child = subprocess.Popen(["sleep", "600"])
            print(f"CHILD<<{child.pid}>>")
            continue
        print(f"you said: {line}")


if __name__ == "__main__":
    main()
