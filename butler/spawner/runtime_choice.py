"""Which adapter runs an interactive session: the butler's own, or another runtime's.

A builder may pick another runtime (``--runtime``). That runtime takes its
settings (model, args, cli_path) from ``[butler.builders.runtimes.<type>]``
when the butler declares one; otherwise the runtime's defaults, with the
butler's limits. ``[butler.runtime]``'s model and args belong to the butler's
own runtime and never reach another CLI.
"""

from __future__ import annotations

from butler.config import ButlerConfig
from butler.errors import UserError
from butler.runtimes.base import RuntimeAdapter
from butler.runtimes.registry import available_runtimes, get_adapter
from butler.runtimes.settings import RuntimeConfig

#: Longest runtime type name shown back in an error (names are short words like ``claude-code``).
MAX_NAME = 64


def check_runtime(config: ButlerConfig, name: str) -> str:
    """``name`` if it is a runtime this butler can run; one clear line otherwise."""
    known = available_runtimes(config.roster_dir)
    if name not in known:
        shown = name[:MAX_NAME] + ("…" if len(name) > MAX_NAME else "")
        raise UserError(f"--runtime: unknown runtime {shown!r}; expected one of {', '.join(known)}")
    return name


def runtime_config(config: ButlerConfig, name: str) -> RuntimeConfig:
    """The settings runtime ``name`` runs with for this butler."""
    own = config.runtime
    if name == own.type:
        return own
    table = config.butler.builders.runtimes.get(name)
    if table is not None:
        return table.model_copy(update={"type": name})
    return RuntimeConfig(
        type=name, max_turns=own.max_turns, timeout_s=own.timeout_s, transport=own.transport
    )


def adapter_for(config: ButlerConfig, own: RuntimeAdapter, name: str | None) -> RuntimeAdapter:
    """The adapter of runtime ``name``: ``own`` (the butler's) when it is that runtime or None."""
    if name is None or name == own.type_name:
        return own
    check_runtime(config, name)
    return get_adapter(name, runtime_config(config, name), config.roster_dir)
