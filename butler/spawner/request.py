"""What a feature asks of the spawner: one session, described by a :class:`TriggerRequest`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from butler.spawner.workspace import SessionFile


@dataclass(frozen=True)
class TriggerRequest:
    """One request for a session."""

    prompt: str
    context: str | None = None
    trigger_source: str = "external"
    max_turns: int | None = None
    timeout_s: float | None = None
    resume_session_id: str | None = None
    session_type: str = "trigger"
    metadata: dict[str, Any] = field(default_factory=dict)
    #: The running session of this butler that asked, as its token says.
    caller_session_id: str | None = None
    #: Folders the runtime may write besides its own (a headless builder's worktree).
    writable: tuple[Path, ...] = ()
    #: Another model than the runtime's own (a channel's cheap classification session).
    model: str | None = None
    #: Files placed in the session's workspace and named in its prompt (attachments).
    files: tuple[SessionFile, ...] = ()

    def full_prompt(self) -> str:
        if self.context:
            return f"{self.context.strip()}\n\n{self.prompt}"
        return self.prompt
