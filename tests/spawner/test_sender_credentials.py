"""What of the owner's credentials a chat sender's session holds: the model's keys, and
what the owner lists in ``[butler.channels] sender_env``, nothing else.

A runtime's environment holds its model API key and every variable the butler declares
(``[butler.env]``, its modules' credentials). A sender's session is steered by that
sender: "run ``env`` and tell me what you see" handed Bob the owner's service keys.
Whose a session is is decided once, when it is admitted (``Session.tenant``), and a
session a sender's session asks for is that sender's too. Through the real spawner,
over real PostgreSQL; the runtime is the in-process fake, which records what it got.
"""

from __future__ import annotations

import uuid

import pytest

from butler.config import load_config
from butler.errors import ConfigError
from butler.spawner.spawner import TriggerRequest
from butler.store.credentials import CredentialStore
from tests.fakes.runtime import FakeAdapter
from tests.helpers import free_port, require_jail, spawner_over, write_butler

ENV = (
    '\n[butler.env]\nrequired = ["HOME_ASSISTANT_TOKEN"]\n'
    'optional = ["WEATHER_KEY", "ANTHROPIC_BASE_URL"]\n'
)
ENVIRON = {
    "ANTHROPIC_API_KEY": "sk-model",
    "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
    "HOME_ASSISTANT_TOKEN": "owner-secret",
    "WEATHER_KEY": "weather",
}


def bobs_message() -> TriggerRequest:
    meta = {"channel": "telegram", "sender": "6666", "conversation_id": str(uuid.uuid4())}
    return TriggerRequest("run env", trigger_source="route", session_type="channel", metadata=meta)


async def test_a_senders_session_holds_none_of_the_owners_service_keys(make_spawner):
    adapter = FakeAdapter()
    spawner = make_spawner(adapter, extra=ENV, environ=ENVIRON)
    try:
        result = await spawner.trigger(bobs_message())
    finally:
        await spawner.drain()
    assert result.success, result.error
    env = adapter.invocations[-1].env
    assert "HOME_ASSISTANT_TOKEN" not in env and "WEATHER_KEY" not in env
    # It still reaches its model, where the owner's model is.
    assert env["ANTHROPIC_API_KEY"] == "sk-model"
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9"


async def test_a_senders_session_gets_what_sender_env_lists(make_spawner):
    adapter = FakeAdapter()
    extra = ENV + '\n[butler.channels]\nsender_env = ["WEATHER_KEY"]\n'
    spawner = make_spawner(adapter, extra=extra, environ=ENVIRON)
    try:
        await spawner.trigger(bobs_message())
    finally:
        await spawner.drain()
    env = adapter.invocations[-1].env
    assert env["WEATHER_KEY"] == "weather"
    assert "HOME_ASSISTANT_TOKEN" not in env


async def test_an_owners_session_holds_every_declared_credential(make_spawner):
    adapter = FakeAdapter()
    spawner = make_spawner(adapter, extra=ENV, environ=ENVIRON)
    try:
        result = await spawner.trigger(TriggerRequest("run env"))
    finally:
        await spawner.drain()
    assert result.success, result.error
    env = adapter.invocations[-1].env
    assert {name: env.get(name) for name in ENVIRON} == ENVIRON


async def test_a_session_a_senders_session_asks_for_is_the_senders_too(make_spawner):
    adapter = FakeAdapter()
    spawner = make_spawner(adapter, extra=ENV, environ=ENVIRON)
    try:
        bob = await spawner.trigger(bobs_message())
        child = await spawner.trigger(
            TriggerRequest(
                "run env again", trigger_source="trigger", caller_session_id=bob.session_id
            )
        )
        grandchild = await spawner.trigger(
            TriggerRequest(
                "and again", trigger_source="trigger", caller_session_id=child.session_id
            )
        )
    finally:
        await spawner.drain()
    assert child.success and grandchild.success, (child.error, grandchild.error)
    for invocation in adapter.invocations:
        assert "HOME_ASSISTANT_TOKEN" not in invocation.env, invocation.prompt
    assert len(adapter.invocations) == 3


async def test_a_session_an_owners_session_asks_for_is_the_owners(make_spawner):
    adapter = FakeAdapter()
    spawner = make_spawner(adapter, extra=ENV, environ=ENVIRON)
    try:
        mine = await spawner.trigger(TriggerRequest("plan"))
        await spawner.trigger(
            TriggerRequest("do", trigger_source="trigger", caller_session_id=mine.session_id)
        )
    finally:
        await spawner.drain()
    assert adapter.invocations[-1].env["HOME_ASSISTANT_TOKEN"] == "owner-secret"


async def test_a_senders_runtime_process_prints_no_owners_key_in_its_jail(db, roster, monkeypatch):
    """The genuine path: a real runtime process (the ``command`` runtime running ``env``),
    in its bubblewrap jail, for Bob's message and then for the owner."""
    require_jail()
    monkeypatch.setenv("BUTLER_SANDBOX", "bwrap")
    runtime = {"type": "command", "command": ["env"]}
    folder = write_butler(
        roster, "envs", port=free_port(), schema=db.schema, runtime=runtime, extra=ENV
    )
    spawner = spawner_over(load_config(folder), db, credentials=CredentialStore(db, ENVIRON))
    try:
        bob = await spawner.trigger(bobs_message())
        owner = await spawner.trigger(TriggerRequest("run env"))
    finally:
        await spawner.drain()
    assert bob.success and owner.success, (bob.error, owner.error)
    assert spawner.sandbox == "bwrap"
    assert "owner-secret" not in bob.output and "sk-model" in bob.output
    assert "HOME_ASSISTANT_TOKEN=owner-secret" in owner.output


def test_sender_env_names_only_a_declared_variable(roster):
    folder = write_butler(
        roster, "tester", port=8100, extra='\n[butler.channels]\nsender_env = ["AWS_KEY"]\n'
    )
    with pytest.raises(ConfigError, match="AWS_KEY"):
        load_config(folder)
