"""butler: personal AI agent daemons.

One butler is one long-running daemon serving its own MCP tools. A ``trigger``
feeds its spawner, which runs an ephemeral, locked-down agent runtime that can
reach this butler's tools and nothing else, and records every session.
"""

from __future__ import annotations

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    # Read on first use: importlib.metadata costs every command line ~30 ms to import.
    if name != "__version__":
        raise AttributeError(f"module 'butler' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    global __version__
    try:
        __version__ = version("butler")
    except PackageNotFoundError:  # running from a source tree that was never installed
        __version__ = "0.0.0+source"
    return __version__
