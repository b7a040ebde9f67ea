"""A headless test runtime that writes its answer in parts, the rest when the test lets it.

It prints a first line at once. With ``WAIT:<fifo>`` in the person's message
it then blocks until the test writes to that FIFO, so the first line is on
the page while the session still runs. Then it says what it was asked, what
it was shown of the conversation before, and the first line of each text file
that came with the message. Standard library only.
"""

import pathlib
import re
import sys

prompt = pathlib.Path(sys.argv[1]).read_text()
print("Let me look into that.", flush=True)
paragraphs = prompt.split("\n\n")
asked = next(
    (
        p
        for p in paragraphs[1:]
        if not p.startswith(("Earlier in this conversation", "Files that came"))
    ),
    "",
)
match = re.search(r"WAIT:(\S+)", asked)
if match:
    with open(match.group(1)) as fifo:  # blocks until a writer opens it
        fifo.read()
print(f"You asked: {re.sub(r'[ ]*WAIT:[^ ]+', '', asked).strip()}")
earlier = [
    re.sub(r"[ ]*WAIT:[^ ]+", "", line) for line in re.findall(r"^person: (.*)$", prompt, re.M)
]
if earlier:
    print(f"Earlier you asked: {' / '.join(earlier)}")
for path in re.findall(r"^- (\S+/files/attachment-\d+\.txt) ", prompt, re.M):
    first = pathlib.Path(path).read_text().splitlines()[0]
    print(f"In {pathlib.Path(path).name}: {first}")
