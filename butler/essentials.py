"""A butler folder read plainly: the few settings a command needs, without validating it all.

Most commands need little of a butler's folder: its name and where its
daemon answers (``trigger``, ``sessions``, ``stop``, ``token``), the runtime
type and the number of schedules (``list``), where its data lives
(``credentials``). Reading those with ``tomllib`` spares each command the
whole configuration's validation (pydantic's models, the runtime adapters),
most of its CPU time.

What is read is checked as the full load checks it. Anything not plainly
there (a parse error, a missing name, a port that is not a number, a runtime
that is not built in) makes :func:`read_essentials` return None, or leaves that one
field None, and the command loads the folder fully so that the mistake is
named exactly as ``butler run`` names it. The rest of the file is not
checked here: ``butler run`` (or ``butler list``'s status) says what else is wrong.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from butler.runtimes.builtin import BUILT_IN

#: A butler's name, as ``[butler] name`` allows it (butler.config.section checks the same).
NAME = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
#: ``[butler.db] schema``, as butler.config.section's SCHEMA_PATTERN.
SCHEMA = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
#: ``[butler] port`` and ``host`` when the file does not say (as ButlerSection's defaults).
DEFAULT_PORT = 8100
DEFAULT_HOST = "127.0.0.1"
DEFAULT_RUNTIME = "claude-code"
#: A roster's own runtimes (butler.runtimes.external): their checks need the full load.
ROSTER_RUNTIMES = "agent_runtime.json"


@dataclass(frozen=True)
class Essentials:
    """What a command reads of a butler folder; a field left None was not plain."""

    name: str
    config_dir: Path
    host: str
    port: int
    #: ``[butler.runtime] timeout_s`` when the file gives one.
    timeout_s: float | None = None
    #: ``[butler.runtime] type`` when it is a built-in one.
    runtime: str | None = None
    #: How many ``[[butler.schedule]]`` entries there are.
    schedules: int | None = None
    #: ``[butler.db] url`` or DATABASE_URL ("" for the embedded database).
    db_url: str | None = None
    #: The schema holding the butler's tables, and whether the owner named it.
    db_schema: str | None = None
    schema_chosen: bool = False

    @property
    def mcp_base_url(self) -> str:
        """As ButlerConfig.mcp_base_url: loopback when bound to all addresses."""
        host = DEFAULT_HOST if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}"


def read_essentials(config_dir: Path) -> Essentials | None:
    """The folder's plain settings, the environment's overrides applied; None if unclear."""
    folder = Path(config_dir).expanduser().resolve()
    try:
        with (folder / "butler.toml").open("rb") as file:
            data = tomllib.load(file)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
    table = data.get("butler")
    if set(data) != {"butler"} or not isinstance(table, dict):
        return None
    if not (folder / "CLAUDE.md").exists():
        return None  # (a runtime reading AGENTS.md only is loaded fully: rare, and right)
    name, host = table.get("name"), os.environ.get("BUTLER_HOST") or table.get("host")
    port: object = table.get("port", DEFAULT_PORT)
    if os.environ.get("BUTLER_PORT"):
        port = int(os.environ["BUTLER_PORT"]) if os.environ["BUTLER_PORT"].isdigit() else None
    runtime = _table(table, "runtime")
    timeout = runtime.get("timeout_s") if runtime is not None else None
    if not (isinstance(name, str) and NAME.match(name)):
        return None
    if not (type(port) is int and 0 < port < 65536):
        return None
    if not isinstance(host if host is not None else "", str):
        return None
    url, schema = _database(table, name)
    return Essentials(
        name=name,
        config_dir=folder,
        host=host or DEFAULT_HOST,
        port=port,
        timeout_s=timeout if type(timeout) in (int, float) and timeout > 0 else None,
        runtime=_runtime_type(runtime, folder),
        schedules=_schedules(table),
        db_url=url,
        db_schema=schema,
        schema_chosen=_named(table),
    )


def _table(table: dict[str, Any], key: str) -> dict[str, Any] | None:
    """``table[key]`` when it is a table or absent (as ``{}``); None when it is something else."""
    found = table.get(key, {})
    return found if isinstance(found, dict) else None


def _runtime_type(runtime: dict[str, Any] | None, folder: Path) -> str | None:
    if runtime is None or (folder.parent / ROSTER_RUNTIMES).exists():
        return None
    kind = os.environ.get("BUTLER_RUNTIME") or runtime.get("type", DEFAULT_RUNTIME)
    return kind if isinstance(kind, str) and kind in BUILT_IN else None


def _schedules(table: dict[str, Any]) -> int | None:
    entries = table.get("schedule", [])
    if isinstance(entries, list) and all(isinstance(e, dict) for e in entries):
        return len(entries)
    return None


def _named(table: dict[str, Any]) -> bool:
    """Whether the owner named the schema (in the file or BUTLER_DB_SCHEMA)."""
    db = _table(table, "db") or {}
    return bool(os.environ.get("BUTLER_DB_SCHEMA")) or db.get("schema") is not None


def _database(table: dict[str, Any], name: str) -> tuple[str | None, str | None]:
    """The database URL ("" for none) and schema, each None when not plain."""
    db = _table(table, "db")
    if db is None:
        return None, None
    url = os.environ.get("DATABASE_URL") or db.get("url")
    if url is None or url == "":
        url = ""
    elif not (isinstance(url, str) and url.startswith(("postgresql://", "postgres://"))):
        url = None
    schema = os.environ.get("BUTLER_DB_SCHEMA") or db.get("schema")
    if schema is None:
        schema = name.replace("-", "_")
    elif not (isinstance(schema, str) and SCHEMA.match(schema)):
        schema = None
    return url, schema
