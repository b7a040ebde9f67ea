"""A headless test runtime that answers only when the test lets it.

With ``WAIT:<fifo>`` in its prompt it blocks opening that FIFO until the test
writes to it, so a session stays ``running`` exactly as long as the test
wants. Standard library only.
"""

import pathlib
import re
import sys

prompt = pathlib.Path(sys.argv[1]).read_text()
match = re.search(r"WAIT:(\S+)", prompt)
if match:
    with open(match.group(1)) as fifo:  # blocks until a writer opens it
        fifo.read()
print(f"done: {prompt.splitlines()[-1]}")
