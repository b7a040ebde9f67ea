"""The adapter contract's files: the session state JSON and the adapter log.

The state file is the orchestrator's record of a run (README, "The adapter contract"): its name,
status, current step, completed steps, failure count and artifacts. butler
reads it before acting and writes it after, so a run can be resumed from it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from butler.errors import UserError
from butler.jsonfile import read_json_object
from butler.paths import Install, butler_dir

#: The state file's keys, with their empty values.
STATE_DEFAULTS: dict[str, Any] = {
    "lego_name": "",
    "status": "pending",
    "current_substep": "",
    "completed_substeps": [],
    "failure_count": 0,
    "artifacts": [],
}
#: Contract status -> the state file's status word.
STATE_STATUS = {
    "pending": "pending",
    "active": "in-progress",
    "completed": "completed",
    "failed": "failed",
}


def read_state(path: Path) -> dict[str, Any]:
    """The state file's contents over the defaults; a missing file is a fresh state."""
    return {**STATE_DEFAULTS, **read_json_object(path, "a state object", UserError)}


def write_state(path: Path, state: dict[str, Any]) -> None:
    """Write the state atomically (a reader never sees half a file)."""
    if not path.parent.is_dir():
        raise UserError(f"{path}: the folder {path.parent} does not exist")
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def brief_name(brief: str, fallback: str) -> str:
    """The run's name: the brief's first heading without ``#`` or a ``LEGO:`` label."""
    for line in brief.splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip()
            return title.split(":", 1)[1].strip() if ":" in title else title
    return fallback


def artifacts_of(tool_calls: list[dict[str, Any]]) -> list[str]:
    """Files the session wrote, from its Write/Edit tool calls."""
    found: list[str] = []
    for call in tool_calls:
        path = (call.get("arguments") or {}).get("file_path")
        if call.get("name") in ("Write", "Edit", "MultiEdit") and path and path not in found:
            found.append(path)
    return found


def adapter_log(butler: Install, session_id: str) -> Path:
    """``sessions/<session_id>/adapter.log`` in the butler's data folder."""
    folder = butler_dir(butler) / "sessions" / session_id
    folder.mkdir(parents=True, exist_ok=True)
    return folder / "adapter.log"


def log_line(butler: Install, session_id: str, message: str) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with adapter_log(butler, session_id).open("a", encoding="utf-8") as fh:
        fh.write(f"{stamp} {message}\n")
