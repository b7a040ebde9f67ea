"""A session a chat's sender started, calling its butler with its own token, over real HTTP.

Rows as the inbox writes them: Alice's conversation and Bob's, each a chat's
session (source ``route``), and a session Alice's started (its chain's root
recorded). Bob's session asks for everything; it gets its own.
"""

from __future__ import annotations

from fastmcp import Client

from butler.store.tenants import tenant_of
from tests.tools.tenants import rows, token_of


async def test_a_senders_session_sees_its_own_conversation_and_nothing_of_anothers(served):
    url, butler = served
    made = await rows(butler)
    await butler.state.set("owner-notes", "the owner's own")
    async with Client(url, auth=token_of(butler, made["alice"])) as alice:
        await alice.call_tool("state_set", {"key": "codes", "value": "K7Q2M-9XHDA"})

    async with Client(url, auth=token_of(butler, made["bob"])) as bob:
        listed = (await bob.call_tool("session_list", {})).structured_content["result"]
        peek = await bob.call_tool(
            "session_get", {"session_id": str(made["alice"])}, raise_on_error=False
        )
        child = await bob.call_tool(
            "session_status", {"session_id": str(made["helper"])}, raise_on_error=False
        )
        resume = await bob.call_tool(
            "session_resume",
            {"session_id": str(made["alice"]), "prompt": "repeat it", "wait": False},
            raise_on_error=False,
        )
        state = (await bob.call_tool("state_list", {})).data
        codes = (await bob.call_tool("state_get", {"key": "codes"})).data
        own = (await bob.call_tool("session_get", {"session_id": str(made["bob"])})).data
        tools = {tool.name for tool in await bob.list_tools()}
        builders = await bob.call_tool("builder_list", {}, raise_on_error=False)

    assert [row["id"] for row in listed] == [str(made["bob"])]
    for refused in (peek, child, resume):
        assert refused.is_error and "not found" in refused.content[0].text
    assert state == {} and codes is None
    assert own["prompt"] == "what did the others ask you?"
    assert "builder_spawn" not in tools and "tick" not in tools and "session_list" in tools
    assert (
        builders.is_error and "not for a session a chat message started" in builders.content[0].text
    )
    # The owner sees everything, the tenant's share under its own prefix.
    everything = await butler.state.list("")
    assert everything["owner-notes"] == "the owner's own"
    assert next(k for k in everything if k.endswith("/codes")).startswith("tenant/conversation-")


async def test_a_session_a_senders_session_started_belongs_to_the_same_conversation(served):
    url, butler = served
    made = await rows(butler)
    async with Client(url, auth=token_of(butler, made["helper"])) as helper:
        listed = (await helper.call_tool("session_list", {})).structured_content["result"]
    async with Client(url, auth=token_of(butler, made["owner"])) as owner:
        everything = (await owner.call_tool("session_list", {})).structured_content["result"]
    assert {row["id"] for row in listed} == {str(made["alice"]), str(made["helper"])}
    assert len(everything) == 4  # an owner's session (a schedule's) sees the whole butler


async def test_the_owner_widens_the_scope_to_the_whole_butler_on_purpose(make_served):
    url, butler = await make_served('\n[butler.channels]\nsender_scope = "butler"\n')
    made = await rows(butler)
    async with Client(url, auth=token_of(butler, made["bob"])) as bob:
        listed = (await bob.call_tool("session_list", {})).structured_content["result"]
    assert len(listed) == 4


async def test_a_session_cannot_claim_another_conversation_by_the_metadata_it_writes(served):
    url, butler = served
    made = await rows(butler)
    alice_talk = (await butler.sessions.get(made["alice"]))["metadata"]["conversation_id"]
    claim = {"channel": "telegram", "sender": "1001", "conversation_id": alice_talk}
    async with Client(url, auth=token_of(butler, made["bob"])) as bob:
        started = await bob.call_tool(
            "session_start", {"prompt": "as Alice", "metadata": claim, "dedupe_key": "d"}
        )
        forged = started.structured_content["session_id"]
        owner_key = await bob.call_tool("state_get", {"key": "owner-notes"})
    async with Client(url, auth=token_of(butler, made["alice"])) as alice:
        hers = (await alice.call_tool("session_list", {})).structured_content["result"]

    tenant = await tenant_of(butler.db, forged, "conversation")
    assert tenant is not None and tenant.root == made["bob"]  # Bob's, whatever it claims
    assert forged not in {row["id"] for row in hers}
    assert owner_key.data is None
    row = await butler.sessions.get(forged)
    assert row["metadata"]["dedupe_key"].startswith("tenant/conversation-")
