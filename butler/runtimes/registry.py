"""The registry of runtime adapters, by ``[butler.runtime] type``.

Built-in adapters are named here as ``module:Class`` and imported on first
use, so listing them (for config validation and error messages) costs
nothing. A roster may add external runtimes in its ``agent_runtime.json``;
those are looked up in the roster a butler comes from, never kept globally,
so two rosters in one process cannot see each other's runtimes.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from butler.runtimes.base import RuntimeAdapter
from butler.runtimes.builtin import BUILT_IN
from butler.runtimes.settings import RuntimeConfig

#: Built-in types, and any a plugin or test registers.
_ADAPTERS: dict[str, str] = dict(BUILT_IN)


def register(type_name: str, target: str) -> None:
    """Register a built-in adapter class given as ``"module:Class"`` (for plugins and tests)."""
    _ADAPTERS[type_name] = target


def roster_runtimes(roster: Path | None) -> dict[str, type[RuntimeAdapter]]:
    """The external runtimes of a roster's ``agent_runtime.json``; ValueError if it is bad."""
    if roster is None:
        return {}
    from butler.runtimes.external import adapter_for, load_runtimes_file

    found: dict[str, type[RuntimeAdapter]] = {}
    for spec in load_runtimes_file(roster):
        if spec.name in _ADAPTERS:
            raise ValueError(f"{roster}: external runtime {spec.name!r} shadows a built-in one")
        found[spec.name] = adapter_for(spec)
    return found


def available_runtimes(roster: Path | None = None) -> list[str]:
    """Every runtime type a butler of ``roster`` may use, sorted."""
    return sorted({*_ADAPTERS, *roster_runtimes(roster)})


def adapter_class(type_name: str, roster: Path | None = None) -> type[RuntimeAdapter]:
    """The adapter class for a runtime type; ``ValueError`` lists the known ones."""
    external = roster_runtimes(roster)
    if type_name in external:
        return external[type_name]
    target = _ADAPTERS.get(type_name)
    if target is None:
        raise ValueError(
            f"unknown runtime type {type_name!r}; available adapters: "
            + ", ".join(available_runtimes(roster))
        )
    module_name, _, class_name = target.partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    if not (isinstance(cls, type) and issubclass(cls, RuntimeAdapter)):
        raise TypeError(f"{target} is not a RuntimeAdapter")
    return cls


def get_adapter(
    type_name: str, config: RuntimeConfig | None = None, roster: Path | None = None
) -> RuntimeAdapter:
    """A new adapter for ``type_name``; ``ValueError`` lists the available adapters."""
    cls = adapter_class(type_name, roster)
    return cls(config or RuntimeConfig(type=type_name))
