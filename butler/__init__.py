"""butler: personal AI agent daemons.

One butler is one long-running daemon serving its own MCP tools. A ``trigger``
feeds its spawner, which runs an ephemeral, locked-down agent runtime that can
reach this butler's tools and nothing else, and records every session.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("butler")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"

__all__ = ["__version__"]
