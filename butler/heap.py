"""The garbage collector of a serving daemon: the start-up heap frozen, young objects
collected less often.

What a start builds (the modules, FastMCP's and the MCP SDK's pydantic models, the
tools, each butler's context) lives as long as the process: hundreds of thousands
of objects. Python's full collection walks every one of them, ~130 ms of CPU with
the event loop stopped, and the objects a trigger leaves behind make one due every
few dozen triggers: a few ms per trigger on average, and a pause in the tail of
whichever trigger meets it. Frozen once serving starts (``gc.freeze``), they sit in
a generation no collection walks; what is made later is collected as before.

A trigger also holds more than 700 new containers at once, Python's threshold for
a young collection, so nearly every trigger paid for one (0.6 ms). At
:data:`YOUNG_THRESHOLD` one comes every twenty triggers or so; a cycle of garbage
waits that much longer to be freed.
"""

from __future__ import annotations

import gc

#: Allocations (less frees) of containers between two young collections (Python's: 700).
YOUNG_THRESHOLD = 5000


def settle_for_serving() -> None:
    """Leave every object alive now out of every later collection, and collect young
    objects less often (call once serving)."""
    gc.freeze()
    young, older, oldest = gc.get_threshold()
    gc.set_threshold(max(YOUNG_THRESHOLD, young), older, oldest)
