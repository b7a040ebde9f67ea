"""The registry of runtime adapters, by ``[butler.runtime] type``.

Adapters are named here as ``module:Class`` and imported on first use, so
listing them (for config validation and error messages) costs nothing.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from butler.config import RuntimeConfig
from butler.runtimes.base import RuntimeAdapter

_ADAPTERS: dict[str, str] = {
    "claude-code": "butler.runtimes.claude_code:ClaudeCodeAdapter",
    "codex": "butler.runtimes.codex:CodexAdapter",
    "command": "butler.runtimes.command:CommandAdapter",
    "gemini": "butler.runtimes.gemini:GeminiAdapter",
    "opencode": "butler.runtimes.opencode:OpenCodeAdapter",
    "copilot": "butler.runtimes.copilot:CopilotAdapter",
}


#: External runtimes registered by rosters' ``agent_runtime.json`` files.
_EXTERNAL: dict[str, type[RuntimeAdapter]] = {}


def load_roster_runtimes(roster: Path) -> list[str]:
    """Register the external runtimes of a roster's ``agent_runtime.json``; ValueError if bad."""
    from butler.runtimes.external import adapter_for, load_runtimes_file

    names = []
    for spec in load_runtimes_file(roster):
        if spec.name in _ADAPTERS:
            raise ValueError(f"{roster}: external runtime {spec.name!r} shadows a built-in one")
        _EXTERNAL[spec.name] = adapter_for(spec)
        names.append(spec.name)
    return names


def register(type_name: str, target: str) -> None:
    """Register an adapter class given as ``"module:Class"``."""
    _ADAPTERS[type_name] = target


def available_runtimes() -> list[str]:
    """Every registered runtime type, sorted."""
    return sorted({*_ADAPTERS, *_EXTERNAL})


def adapter_class(type_name: str) -> type[RuntimeAdapter]:
    """The adapter class for a runtime type; ``ValueError`` lists the known ones."""
    if type_name in _EXTERNAL:
        return _EXTERNAL[type_name]
    target = _ADAPTERS.get(type_name)
    if target is None:
        raise ValueError(
            f"unknown runtime type {type_name!r}; available adapters: "
            + ", ".join(available_runtimes())
        )
    module_name, _, class_name = target.partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    if not (isinstance(cls, type) and issubclass(cls, RuntimeAdapter)):
        raise TypeError(f"{target} is not a RuntimeAdapter")
    return cls


def get_adapter(type_name: str, config: RuntimeConfig | None = None) -> RuntimeAdapter:
    """A new adapter for ``type_name``; ``ValueError`` lists the available adapters."""
    cls = adapter_class(type_name)
    return cls(config or RuntimeConfig(type=type_name))
