"""A session is described once, at admission, and every run takes that description
whole: a field of :class:`Session` reaches the runtime's run in the daemon and, through
the job queue and a worker, on another machine, with no code written for it.

:data:`EVERY_FIELD` is the one place a new field is added in this test (the first
test fails until it is). The daemon is served in this test's loop and a real worker
(:class:`Worker`, PgQueuer's queue in PostgreSQL, its claim, its hand-back) runs in the
same process, so that the run each one starts is seen as it is called.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from pathlib import Path
from typing import Any

import pytest

from butler.config import load_config
from butler.spawner.execution import Execution
from butler.spawner.request import TriggerRequest
from butler.spawner.session import Session
from butler.spawner.workspace import SessionFile
from butler.store.sessions import NewSession, SessionStore
from butler.workers.worker import Worker, WorkerSettings
from tests.helpers import free_port, spawner_over, write_butler
from tests.workers.fleet import served

pytestmark = pytest.mark.slow

PARENT = uuid.UUID("00000000-0000-4000-8000-00000000f1e1")

#: A value for every field of a session but its id, none of them the default: a new
#: field gets its value here, and the runs below must receive it.
EVERY_FIELD: dict[str, Any] = {
    "prompt": "the whole prompt",
    "source": "schedule:fields",
    "type": "scheduled",
    "metadata": {"conversation_id": "c-7", "origin": "telegram"},
    "parent_id": str(PARENT),
    "root_id": str(PARENT),
    "depth": 1,
    "resumed_id": str(PARENT),
    "resume": "runtime-conversation-7",
    "max_turns": 7,
    "timeout_s": 45.0,
    "model": "model-7",
    "files": (SessionFile("note.txt", b"seven\n", "text/plain"),),
    "writable": (Path("/srv/worktree-7"),),
    "tenant": "sender-7",
}
#: Fields a worker never gets, and why: folders of the daemon's machine are refused
#: for a worker when the session is enqueued (tests/workers/test_worker_sessions.py).
HERE_ONLY = {"writable"}


def test_every_field_of_a_session_has_a_value_here():
    """The guard: a field added to Session and not to EVERY_FIELD fails here first."""
    defaults = Session(id="x", prompt="")
    for field in dataclasses.fields(Session):
        if field.name == "id":
            continue
        assert field.name in EVERY_FIELD, f"give Session.{field.name} a value in EVERY_FIELD"
        assert EVERY_FIELD[field.name] != getattr(defaults, field.name), field.name


async def test_every_field_of_a_session_reaches_its_run_in_the_daemon_and_on_a_worker(
    db, pg_dsn, tmp_path, monkeypatch
):
    port = free_port()

    def butler(roster: str, workers: str) -> Path:
        runtime = {"type": "command", "command": ["echo", "ran"], "workers": workers}
        return write_butler(
            tmp_path / roster, "fields", port=port, schema=db.schema, runtime=runtime
        )

    here, there = load_config(butler("here", "local")), butler("there", "remote")
    # The session it resumes and that asked for it: a row of this butler.
    await SessionStore(db).create(NewSession("before", "external", "command", id=PARENT))

    def admitted(request: TriggerRequest, *_: object) -> Session:
        given = dict(EVERY_FIELD)
        if request.prompt == "to a worker":
            given = {k: v for k, v in given.items() if k not in HERE_ONLY}
        return Session(id=str(uuid.uuid4()), **given)

    ran: list[Session] = []
    run = Execution.run

    async def seen(self: Execution, session: Session, *args: Any, **kwargs: Any) -> Any:
        ran.append(session)
        return await run(self, session, *args, **kwargs)

    monkeypatch.setattr(Session, "admitted", staticmethod(admitted))
    monkeypatch.setattr(Execution, "run", seen)

    local = await spawner_over(here, db).trigger(TriggerRequest("here"))
    assert local.success, local.error
    async with served(there, pg_dsn, "127.0.0.1") as daemon:
        worker = Worker([daemon.config], pg_dsn, WorkerSettings(capacity=2))
        assert await worker.start() == []
        working = asyncio.create_task(worker.run())
        try:
            remote = await asyncio.wait_for(
                daemon.spawner.trigger(TriggerRequest("to a worker")), 120
            )
        finally:
            working.cancel()
            await asyncio.gather(working, return_exceptions=True)
    assert remote.success, remote.error

    in_daemon, on_worker = ran
    assert in_daemon == Session(id=local.session_id, **EVERY_FIELD)
    assert on_worker == Session(
        id=remote.session_id, **{k: v for k, v in EVERY_FIELD.items() if k not in HERE_ONLY}
    )
    store = SessionStore(db)
    on_the_worker, in_the_daemon = (
        await store.get(remote.session_id),
        await store.get(local.session_id),
    )
    assert on_the_worker and on_the_worker["metadata"]["worker"] == worker.name  # it ran there
    assert in_the_daemon and "worker" not in in_the_daemon["metadata"]
