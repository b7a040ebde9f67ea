"""The heap a daemon builds to serve, frozen: the garbage collector stops walking it.

What a start builds (the modules, FastMCP's and the MCP SDK's pydantic models, the
tools, each butler's context) lives as long as the process: hundreds of thousands
of objects. Python's full collection walks every one of them, ~130 ms of CPU with
the event loop stopped, and the objects a trigger leaves behind make one due every
few dozen triggers: a few ms per trigger on average, and a pause in the tail of
whichever trigger meets it. Frozen once serving starts (``gc.freeze``), they sit in
a generation no collection walks; what is made later is collected as before.
"""

from __future__ import annotations

import gc


def freeze_start_up() -> None:
    """Leave every object alive now out of every later collection (call once serving)."""
    gc.freeze()
