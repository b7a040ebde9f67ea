"""A session is described once, at admission, and that description crosses to a worker
as JSON whole: what the request asked, resolved, in one frozen value."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import pytest

from butler.spawner.chains import ChainPlace
from butler.spawner.remote import Job
from butler.spawner.request import TriggerRequest
from butler.spawner.session import Session
from butler.spawner.workspace import SessionFile

PARENT = {"id": "6a1f3c2e-0000-4000-8000-000000000001", "runtime_session_id": "rt-parent"}
CALLER = "6a1f3c2e-0000-4000-8000-000000000002"
ROOT = uuid.UUID("6a1f3c2e-0000-4000-8000-000000000003")


def test_admission_resolves_the_request_into_the_session_it_describes():
    note = SessionFile("a.txt", b"hi", "text/plain")
    request = TriggerRequest(
        prompt="do it",
        context="you are asked by a chat",
        trigger_source="route",
        max_turns=3,
        timeout_s=40,
        session_type="route",
        metadata={"conversation_id": "c-1"},
        caller_session_id=CALLER,
        writable=(Path("/w"),),
        model="cheap",
        files=(note,),
    )
    session = Session.admitted(request, PARENT, ChainPlace(ROOT, 2))
    assert uuid.UUID(session.id)
    assert session.prompt == "you are asked by a chat\n\ndo it"
    assert (session.source, session.type, session.model) == ("route", "route", "cheap")
    # Asked for by a session that resumes another: the asker is the parent, the resumed
    # one is on the row, and its home and conversation are what the runtime continues.
    assert session.parent_id == CALLER
    assert session.metadata == {"conversation_id": "c-1", "resumed_session_id": PARENT["id"]}
    assert (session.resumed_id, session.resume) == (PARENT["id"], "rt-parent")
    assert (session.root_id, session.depth) == (str(ROOT), 2)
    assert (session.max_turns, session.timeout_s) == (3, 40)
    assert session.files == (note,) and session.writable == (Path("/w"),)
    assert request.metadata == {"conversation_id": "c-1"}  # the request is left as it was


def test_a_fresh_root_session_has_no_parent_and_no_chain():
    session = Session.admitted(TriggerRequest(prompt="hello"))
    assert session.parent_id is None and session.root_id is None and session.depth == 0
    assert session.resumed_id is None and session.resume is None


def test_a_resumed_session_without_an_asker_has_its_resumed_one_as_parent():
    session = Session.admitted(TriggerRequest(prompt="again"), PARENT)
    assert session.parent_id == PARENT["id"] and "resumed_session_id" not in session.metadata


def test_a_chat_message_makes_its_senders_session_and_an_owners_call_the_owners():
    meta = {"channel": "telegram", "sender": "6666", "conversation_id": "c-1"}
    bob = Session.admitted(TriggerRequest("hi", trigger_source="route", metadata=meta))
    assert bob.tenant is not None and bob.tenant.startswith("sender-")
    assert Session.admitted(TriggerRequest("hi", metadata=meta)).tenant is None  # the owner's


def test_a_session_asked_for_is_its_chains_whatever_its_own_request_says():
    """The chain decides: a sender's session cannot ask for an owner's, nor pass for the
    web chat's owner through the metadata it gives."""
    owners = {"channel": "web", "sender": "owner"}
    asked = TriggerRequest("x", trigger_source="trigger", caller_session_id=CALLER, metadata=owners)
    assert Session.admitted(asked, chain=ChainPlace(ROOT, 1, "sender-b0b")).tenant == "sender-b0b"
    assert Session.admitted(asked, chain=ChainPlace(ROOT, 1, None)).tenant is None


def test_a_session_crosses_to_a_worker_whole_in_its_job():
    session = Session.admitted(
        TriggerRequest(prompt="p", timeout_s=30, files=(SessionFile("b.bin", b"\x00\xff"),)),
        PARENT,
    )
    job = Job.decode(Job(session).encode())
    assert job == Job(session)
    assert isinstance(job.session.timeout_s, float)


def test_the_memory_its_daemon_recalled_crosses_to_a_worker_in_the_job():
    session = Session(id="x", prompt="p")
    block = "# Past session records\n- asked: marker"
    assert Job.decode(Job(session, block).encode()) == Job(session, block)
    assert "memory" not in Job(session).encode().decode()  # nothing recalled: no key


@pytest.mark.parametrize(
    "payload",
    [
        b"not json",
        b'{"job": "t"}',
        b'{"session": []}',
        b'{"session": {"prompt": "p"}}',
        b'{"session": {"id": "x", "prompt": "p", "max_turns": "9"}}',
        b'{"session": {"id": "x", "prompt": "p", "max_turns": true}}',
        b'{"session": {"id": "x", "prompt": "p", "metadata": []}}',
        b'{"session": {"id": "x", "prompt": "p", "files": [{"name": "../x"}]}}',
        b'{"session": {"id": "x", "prompt": "p", "writable": "/"}}',
        b'{"session": {"id": "x", "prompt": "p"}, "memory": ["a"]}',
        b"[]",
    ],
)
def test_a_job_that_is_not_a_sessions_is_refused_in_one_error(payload):
    with pytest.raises(ValueError):
        Job.decode(payload)


def test_a_field_a_newer_daemon_added_is_left_out_by_an_older_worker():
    data = {**Session(id="x", prompt="p").to_json(), "from_the_future": 1}
    assert Session.from_json(data) == Session(id="x", prompt="p")


def test_a_field_added_to_the_session_needs_no_code_to_cross_as_json():
    """A new field of a plain type is read and written from the field itself."""

    @dataclasses.dataclass(frozen=True)
    class Grown(Session):
        priority: int | None = None

    grown = Grown(id="x", prompt="p", priority=3)
    assert Grown.from_json(grown.to_json()) == grown
