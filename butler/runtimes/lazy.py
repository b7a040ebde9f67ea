"""Modules imported on first use, so a daemon's start does not pay for them.

A start imports only what serving needs; a runtime's library (claude-agent-sdk
alone is a fifth of a start) loads when its first session starts, in a
worker thread so the event loop keeps serving meanwhile. The import system's
own module lock makes a first use racing that thread safe: it waits.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from types import ModuleType
from typing import Any


class LazyModule:
    """Stands for module ``name``; attribute access imports it."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(importlib.import_module(self._name), attribute)


async def ready(name: str) -> ModuleType:
    """Module ``name``, imported in a worker thread the first time."""
    module = sys.modules.get(name)
    if module is not None:
        return module
    return await asyncio.to_thread(importlib.import_module, name)
