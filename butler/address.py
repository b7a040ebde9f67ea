"""Where a butler's daemon answers, read from its folder without validating it all.

Commands that only talk to a running daemon (``butler trigger``, ``sessions``,
``logs``, ``stop``...) need its name, host and port, nothing else: reading
them with ``tomllib`` spares each such command the whole configuration's
validation (pydantic's models, the runtime adapters), most of its CPU time.
Anything not plainly there (a parse error, a missing name, a port that is
not a number) returns None, and the command loads the folder fully so that
the mistake is named as ``butler run`` would name it.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

#: A butler's name, as ``[butler] name`` allows it (butler.config.section checks the same).
NAME = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
#: ``[butler] port`` and ``host`` when the file does not say (as ButlerSection's defaults).
DEFAULT_PORT = 8100
DEFAULT_HOST = "127.0.0.1"


@dataclass(frozen=True)
class DaemonAddress:
    """The settings of a butler folder that say how to reach its daemon."""

    name: str
    config_dir: Path
    host: str
    port: int
    #: ``[butler.runtime] timeout_s`` when the file gives one.
    timeout_s: int | None = None

    @property
    def mcp_base_url(self) -> str:
        """As ButlerConfig.mcp_base_url: loopback when bound to all addresses."""
        host = DEFAULT_HOST if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}"


def daemon_address(config_dir: Path) -> DaemonAddress | None:
    """The folder's daemon address, the environment's overrides applied; None if unclear."""
    folder = Path(config_dir).expanduser().resolve()
    try:
        with (folder / "butler.toml").open("rb") as file:
            table = tomllib.load(file).get("butler")
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(table, dict) or not (folder / "CLAUDE.md").exists():
        return None  # (a runtime reading AGENTS.md only is loaded fully: rare, and right)
    name, host = table.get("name"), os.environ.get("BUTLER_HOST") or table.get("host")
    port: object = table.get("port", DEFAULT_PORT)
    if os.environ.get("BUTLER_PORT"):
        port = int(os.environ["BUTLER_PORT"]) if os.environ["BUTLER_PORT"].isdigit() else None
    runtime = table.get("runtime")
    timeout = runtime.get("timeout_s") if isinstance(runtime, dict) else None
    if not (isinstance(name, str) and NAME.match(name)):
        return None
    if not (type(port) is int and 0 < port < 65536):
        return None
    if not isinstance(host if host is not None else "", str):
        return None
    return DaemonAddress(
        name=name,
        config_dir=folder,
        host=host or DEFAULT_HOST,
        port=port,
        timeout_s=timeout if type(timeout) is int and timeout > 0 else None,
    )
