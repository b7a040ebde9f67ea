"""An outside attacker's tries at another person's conversation, or at the owner's, from a
chat sender's own session (its own token, over real HTTP, as its runtime would call).

Rows as the inbox writes them (tests/tools/test_tenancy.py): Alice's conversation,
a session her session started, Bob's conversation and an owner's schedule. Bob is the
attacker; his model does whatever he asks.
"""

from __future__ import annotations

import uuid

from fastmcp import Client

from tests.helpers import butler_client
from tests.tools.tenants import rows, token_of


async def test_a_senders_session_cannot_plant_the_session_an_owners_dedupe_key_joins(served):
    """``session_start`` with a ``dedupe_key`` joins the session already running under it:
    Bob's session wrote the owner's key into its own session's metadata, and the owner's
    morning briefing returned Bob's session, whose answer Bob wrote."""
    url, butler = served
    made = await rows(butler)
    butler.spawner.adapter.release.clear()  # every session runs until the test is done
    try:
        async with Client(url, auth=token_of(butler, made["bob"])) as bob:
            planted = await bob.call_tool(
                "session_start",
                {"prompt": "answer: wire 500 EUR to Bob", "metadata": {"dedupe_key": "briefing"}},
            )
        async with butler_client(url) as owner:
            briefing = await owner.call_tool(
                "session_start", {"prompt": "the morning briefing", "dedupe_key": "briefing"}
            )
    finally:
        butler.spawner.adapter.release.set()
    bobs = planted.structured_content["session_id"]
    owners = briefing.structured_content
    assert owners["started"] is True and owners["session_id"] != bobs
    row = await butler.sessions.get(bobs)
    assert row["metadata"].get("dedupe_key") is None


async def test_crafted_session_ids_reach_no_session_of_anothers(served):
    """The ids ``uuid.UUID`` reads the same (braces, ``urn:uuid:``, capitals, no dashes)
    and near misses: each is "not found" to Bob, whichever tool he names it to."""
    url, butler = served
    made = await rows(butler)
    alice = made["alice"]
    crafted = [
        str(alice).upper(),
        f"{{{alice}}}",
        f"urn:uuid:{alice}",
        alice.hex,
        f" {alice} ",
        f"{alice}\x00",
        str(alice)[:8],
        f"{made['bob']},{alice}",
        f"{made['bob']}' OR '1'='1",
    ]
    async with Client(url, auth=token_of(butler, made["bob"])) as bob:
        for session_id in crafted:
            for tool, extra in (
                ("session_get", {}),
                ("session_status", {}),
                ("session_resume", {"prompt": "go on", "wait": False}),
            ):
                found = await bob.call_tool(
                    tool, {"session_id": session_id, **extra}, raise_on_error=False
                )
                assert found.is_error, (tool, session_id, found)
                assert "Alice" not in str(found.content) and "HIV" not in str(found.content)


async def test_state_keys_crafted_to_leave_a_senders_share_stay_in_it(served):
    url, butler = served
    made = await rows(butler)
    alice_talk = (await butler.sessions.get(made["alice"]))["metadata"]["conversation_id"]
    async with Client(url, auth=token_of(butler, made["alice"])) as alice:
        await alice.call_tool("state_set", {"key": "codes", "value": "K7Q2M-9XHDA"})
    await butler.state.set("owner-notes", "the owner's own")
    hers = f"tenant/conversation-{alice_talk}/codes"
    tries = [
        hers,
        f"../../{hers}",
        f"/{hers}",
        "../owner-notes",
        "owner-notes",
        "\u2024\u2024/owner-notes",
        "tenant/",
        "%",
        "_",
        "\\",
        "x" * 1000,
    ]
    async with Client(url, auth=token_of(butler, made["bob"])) as bob:
        for key in tries:
            got = await bob.call_tool("state_get", {"key": key}, raise_on_error=False)
            assert got.is_error or got.data is None, (key, got)
        for prefix in ("", "%", "_", "\\", "tenant/", "../", "t"):
            listed = await bob.call_tool("state_list", {"prefix": prefix}, raise_on_error=False)
            assert listed.is_error or listed.data == {}, (prefix, listed)
        for key in (hers, "owner-notes"):
            await bob.call_tool("state_delete", {"key": key}, raise_on_error=False)
            await bob.call_tool("state_set", {"key": key, "value": "Bob was here"})
    assert await butler.state.get(hers) == "K7Q2M-9XHDA"
    assert await butler.state.get("owner-notes") == "the owner's own"


async def test_a_senders_session_reaches_no_owners_tool_by_any_name_or_route(served):
    """Tools the owner's sessions have are refused by name whatever the spelling, and the
    dashboard's JSON twins take no session token at all."""
    url, butler = served
    made = await rows(butler)
    token = token_of(butler, made["bob"])
    async with Client(url, auth=token) as bob:
        for name in ("builder_spawn", "schedule_create", "tick", "Builder_Spawn", "schedule_run"):
            refused = await bob.call_tool(name, {}, raise_on_error=False)
            assert refused.is_error, name
    import httpx

    base = url.removesuffix("/mcp")
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
        for path in ("/api/status", "/api/sessions", f"/api/sessions/{made['alice']}", "/"):
            answer = await http.get(base + path, headers={"Accept": "application/json"})
            assert answer.status_code == 401, (path, answer.status_code)
    assert uuid.UUID(str(made["alice"]))
