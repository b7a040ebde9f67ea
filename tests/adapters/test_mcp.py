"""The MCP SDK under butler/adapters/mcp.py: wire models left unbuilt at import, and those
of a tool session built before ``/health``.

Built at import, the SDK's wire models of both protocol eras were a tenth of a start.
Were the SDK's models to stop deriving from the base the adapter defers (or the eras
to move), every model would be built at import again: a start slower by that much,
which only this test would notice. In a process of its own: nothing of the SDK may be
imported before the adapter defers it.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers import REPO

SCRIPT = """
import json, pydantic
from butler.adapters import mcp
deferred = mcp.defer_wire_models()
import butler.server
mcp.build_wire_models()
import mcp_types._v2025_11_25 as a, mcp_types._v2026_07_28 as b
built = {f'{m.__name__}.{n}': c.__pydantic_complete__ for m in (a, b)
         for n, c in vars(m).items() if isinstance(c, type)
         and issubclass(c, pydantic.BaseModel) and c.__module__ == m.__name__}
print(json.dumps({"deferred": deferred, "built": built}))
"""


def test_a_start_builds_only_the_wire_models_a_tool_session_uses():
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["deferred"] is True
    built = answer["built"]
    for era in ("mcp_types._v2025_11_25", "mcp_types._v2026_07_28"):
        assert built[f"{era}.CallToolRequest"] and built[f"{era}.ListToolsResult"]
        assert not built[f"{era}.GetPromptRequest"]
        assert not built[f"{era}.ReadResourceRequest"]
    assert sum(built.values()) < len(built) / 4
