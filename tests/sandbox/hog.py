"""A runtime that hogs what its jail holds, as its prompt says (argv: PROMPT_FILE).

``processes N``: start N children that sleep; ``memory MB``: hold MB of written
memory, 16 MiB at a time; ``alive``: answer after a moment. Prints what it managed.
"""

import os
import sys
import time

what, _, amount = open(sys.argv[1]).read().strip().partition(" ")
if what == "processes":
    for _ in range(int(amount)):
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
        time.sleep(0.005)
    print(f"started {amount} processes")
elif what == "memory":
    held = []
    for _ in range(int(amount) // 16):
        held.append(b"x" * (16 << 20))
        time.sleep(0.01)
    print(f"held {amount} MiB")
else:
    time.sleep(3)
    print("alive")
