"""Which runtime a builder runs: the butler's own, or one picked with ``--runtime``.

A picked runtime takes its settings (model, args, cli_path) from
``[butler.builders.runtimes.<type>]`` when the butler declares one; otherwise
the runtime's defaults, with the butler's limits. ``[butler.runtime]``'s model
and args belong to the butler's own runtime and never reach another CLI.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from butler.config import ButlerConfig
from butler.errors import UserError
from butler.paths import butler_dir
from butler.runtimes.base import RuntimeAdapter, Transcript
from butler.runtimes.registry import available_runtimes, get_adapter
from butler.runtimes.settings import RuntimeConfig

log = logging.getLogger(__name__)

#: Longest runtime type name accepted (names are short words like ``claude-code``).
MAX_NAME = 64


def check_runtime(config: ButlerConfig, name: str) -> str:
    """``name`` if it is a runtime this butler can run; one clear line otherwise."""
    known = available_runtimes(config.roster_dir)
    if name not in known:
        shown = name[:MAX_NAME] + ("…" if len(name) > MAX_NAME else "")
        raise UserError(f"--runtime: unknown runtime {shown!r}; expected one of {', '.join(known)}")
    return name


def runtime_config(config: ButlerConfig, name: str) -> RuntimeConfig:
    """The settings a builder on runtime ``name`` runs with."""
    own = config.runtime
    if name == own.type:
        return own
    table = config.butler.builders.runtimes.get(name)
    if table is not None:
        return table.model_copy(update={"type": name})
    return RuntimeConfig(
        type=name, max_turns=own.max_turns, timeout_s=own.timeout_s, transport=own.transport
    )


def builder_adapter(config: ButlerConfig, default: RuntimeAdapter, name: str) -> RuntimeAdapter:
    """The adapter of runtime ``name``: the butler's own one when it is that runtime."""
    if name == default.type_name:
        return default
    check_runtime(config, name)
    return get_adapter(name, runtime_config(config, name), config.roster_dir)


def transcript_of(
    config: ButlerConfig, default: RuntimeAdapter, row: dict[str, Any], folder: Path
) -> Transcript | None:
    """What an ended builder's runtime used, from its CLI's own files (None if unknown).

    ``folder`` is the runtime's own folder in the builder's; its home is its session's.
    """
    try:
        adapter = builder_adapter(config, default, row["runtime"])
        home = butler_dir(config.name) / "homes" / str(row["id"])
        return adapter.transcript(home, folder)
    except Exception:  # usage is worth having, never worth losing the row for
        log.exception("could not read the usage of builder session %s", row["id"])
        return None
