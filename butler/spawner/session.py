"""One admitted session, described once: what to run, for whom, with which limits.

The spawner makes a :class:`Session` when it admits a request (a feature's
:class:`~butler.spawner.request.TriggerRequest`, its resumed session and its
place in a chain resolved: :meth:`Session.admitted`), writes the session's row
from it, and hands it whole to whatever runs the runtime:
:class:`~butler.spawner.execution.Execution` in the daemon, or, as JSON through
the job queue (:mod:`.remote`), the same on a worker. A field added here
reaches every run, on every machine: nothing after admission describes a
session again, and its JSON is read and written from the fields themselves.

What it does not hold belongs to one run, not to the session: the machine's
address for the butler, the workspace, and the session's token, which comes
from the daemon's issuer (a worker's is given with its job).
"""

from __future__ import annotations

import dataclasses
import types
import typing
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from butler.spawner.chains import ChainPlace
from butler.spawner.request import TriggerRequest
from butler.spawner.workspace import SessionFile
from butler.store.tenants import sender_key


@dataclass(frozen=True)
class Session:
    """One admitted session: made once, frozen, and taken whole by every run."""

    id: str
    #: The whole prompt: the request's, its context first.
    prompt: str
    #: Who asked, as the row says it (``external``, ``trigger``, ``route``, ``schedule:x``).
    source: str = "external"
    #: What kind of session it is on its row (``trigger``, ``shell``, ...).
    type: str = "trigger"
    #: On the row from the start: where it came from (a chat's conversation), what it
    #: resumed when another session asked for it.
    metadata: Mapping[str, Any] = field(default_factory=dict)
    #: The session that asked for this one, else the one it resumes.
    parent_id: str | None = None
    #: Its chain's root trigger and its distance from it, when a session asked for it.
    root_id: str | None = None
    depth: int = 0
    #: The recorded session it continues: its home seeds this one's.
    resumed_id: str | None = None
    #: That session's runtime conversation, which the runtime continues.
    resume: str | None = None
    max_turns: int | None = None
    timeout_s: float | None = None
    #: Another model than the runtime's configured one.
    model: str | None = None
    #: Files placed in its workspace and named in its prompt (a chat message's attachments).
    files: tuple[SessionFile, ...] = ()
    #: Folders of the daemon's machine the runtime may write (a headless builder's worktree).
    writable: tuple[Path, ...] = ()
    #: Whose session it is, decided here once: None for the owner's, else the key of the
    #: chat sender who steers it (:func:`~butler.store.tenants.sender_key`), for every
    #: session of that sender's chain. A sender's session has only the model's keys and
    #: ``[butler.channels] sender_env`` in its environment, and reads its butler folder.
    tenant: str | None = None

    @classmethod
    def admitted(
        cls,
        request: TriggerRequest,
        resumed: Mapping[str, Any] | None = None,
        chain: ChainPlace | None = None,
    ) -> Session:
        """The session ``request`` asks for, resuming the row ``resumed`` (if any), at its
        ``chain`` place when a session asked for it."""
        metadata = dict(request.metadata)
        resumed_id = str(resumed["id"]) if resumed else None
        parent_id = resumed_id
        if request.caller_session_id:  # the session that asked is the parent
            if resumed_id:
                metadata["resumed_session_id"] = resumed_id
            parent_id = request.caller_session_id
        chain = chain or ChainPlace()
        # The asking session's chain decides whose a child is; a root is whoever started it.
        if request.caller_session_id:
            tenant = chain.tenant
        else:
            tenant = sender_key(request.trigger_source, metadata)
        return cls(
            id=str(uuid.uuid4()),
            prompt=request.full_prompt(),
            source=request.trigger_source,
            type=request.session_type,
            metadata=metadata,
            parent_id=parent_id,
            root_id=str(chain.root_id) if chain.root_id else None,
            depth=chain.depth,
            resumed_id=resumed_id,
            resume=resumed["runtime_session_id"] if resumed else None,
            max_turns=request.max_turns,
            timeout_s=request.timeout_s,
            model=request.model,
            files=request.files,
            writable=request.writable,
            tenant=tenant,
        )

    def to_json(self) -> dict[str, Any]:
        """The session as JSON (a job's payload): every field, by its name."""
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data["metadata"] = dict(self.metadata)
        data["files"] = [file.to_json() for file in self.files]
        data["writable"] = [str(path) for path in self.writable]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Session:
        """The session :meth:`to_json` gave; ValueError for anything else (a field of
        the wrong type). Names it does not know are left out: a newer daemon's."""
        hints = typing.get_type_hints(cls)
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name not in data:
                continue
            value = data[f.name]
            if f.name == "files":
                value = tuple(SessionFile.from_json(entry) for entry in _list(f.name, value))
            elif f.name == "writable":
                value = tuple(Path(_checked(f.name, p, str)) for p in _list(f.name, value))
            else:
                value = _checked(f.name, value, hints[f.name])
            values[f.name] = value
        try:
            return cls(**values)
        except TypeError as exc:  # a field without a default missing
            raise ValueError(f"a session as JSON: {exc}") from None


def _list(name: str, value: object) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"a session as JSON: {name} is not a list")
    return value


def _checked(name: str, value: object, hint: Any) -> Any:
    """``value`` when it is of type ``hint`` (a plain type, a mapping, or a union of them
    with None); an int stands for a float, as JSON writes one. ValueError otherwise."""
    options = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    for option in options:
        kind = typing.get_origin(option) or option
        if kind is Mapping:
            kind = dict
        if option is Any:
            return value
        if option is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, kind) and not (isinstance(value, bool) and kind is int):
            return value
    raise ValueError(f"a session as JSON: {name} is {type(value).__name__}, expected {hint}")
