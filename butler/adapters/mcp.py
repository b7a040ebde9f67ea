"""The MCP SDK (``mcp`` and ``mcp-types``): its wire models built at first use, not at import.

The SDK defines every message of every protocol era twice over (2025-11-25 and
2026-07-28, some 300 pydantic models) and builds each one's validator on import: a
tenth of a start, for messages a tool session mostly never sends.

Relies on (checked against mcp and mcp-types 2.3.0, pinned in pyproject.toml;
tests/adapters/test_mcp.py fails when any of it changes): every wire model derives
from ``mcp_types._wire_base.WireModel``, defined before the era modules
(``mcp_types._v2025_11_25``, ``mcp_types._v2026_07_28``), so ``defer_build`` set on
its config before they are imported reaches them all; ``mcp_types.methods`` maps
each method and version to the models it is checked against.
"""

from __future__ import annotations

import sys
from typing import get_args

__all__ = ["SESSION_METHODS", "build_wire_models", "defer_wire_models"]

#: What an agent's tool session sends, in either protocol era: a handshake (2025) or a
#: discovery (2026), pings, listings and calls of tools, a cancellation.
SESSION_METHODS = frozenset(
    {
        "initialize",
        "notifications/initialized",
        "server/discover",
        "ping",
        "tools/list",
        "tools/call",
        "notifications/cancelled",
    }
)

#: The era modules; once one is imported, its models were built.
ERA_MODULES = ("mcp_types._v2025_11_25", "mcp_types._v2026_07_28")


def defer_wire_models() -> bool:
    """Have the SDK's per-version wire models built at first use, not at import.

    Only the models a session uses are then built, by :func:`build_wire_models`
    before ``/health`` answers. False when it is too late (an era module was
    imported already) or the SDK has no such base: the models are built on import,
    as the SDK does by itself (slower, never wrong).
    """
    if any(name in sys.modules for name in ERA_MODULES):
        return False
    try:
        from mcp_types._wire_base import WireModel
    except ImportError:
        return False

    WireModel.model_config["defer_build"] = True
    return True


def build_wire_models() -> None:
    """Build the wire models a tool session is checked against, in every protocol version.

    Left unbuilt at import by :func:`defer_wire_models`; built here, before
    ``/health`` answers, the first call pays none of it. The rest of the protocol
    (prompts, resources, sampling, tasks) is built if a client ever uses it.
    """
    from mcp_types import methods

    surfaces = (methods.CLIENT_REQUESTS, methods.CLIENT_NOTIFICATIONS, methods.SERVER_RESULTS)
    for surface in surfaces:
        for (method, _version), target in surface.items():
            if method in SESSION_METHODS:
                for model in get_args(target) or (target,):
                    model.model_rebuild()
