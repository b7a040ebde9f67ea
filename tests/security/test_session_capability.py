"""A runtime holds only its session's token: attributed by it, limited by it, dead after it."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.helpers import InProcessButler, butler_client, eventually
from tests.security.conftest import agent_runtime

pytestmark = pytest.mark.slow  # a real server, and runtimes as processes

FORGED = "00000000-0000-4000-8000-000000000001"
SCHEDULE = '\n[[butler.schedule]]\nname = "daily"\ncron = "0 8 * * *"\nprompt = "[]"\n'


async def run_agent(
    butler: InProcessButler, steps: list[dict[str, Any]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Trigger a session whose runtime takes ``steps``; its result and what each step got."""
    async with butler_client(f"{butler.url}/mcp", timeout=120) as owner:
        answer = await owner.call_tool("trigger", {"prompt": json.dumps(steps), "timeout_s": 60})
    result = answer.structured_content
    assert result["success"], result
    return result, json.loads(result["output"])


async def test_a_session_triggering_its_butler_while_its_slot_is_the_only_one_is_queued(serve):
    forged = {"headers": {"X-Butler-Session": FORGED}, "query": f"?session={FORGED}"}
    steps = [
        {"tool": "trigger", "args": {"prompt": "[]"}},  # no session header at all
        {"tool": "trigger", "args": {"prompt": "[]"}, **forged},  # a session header, forged
        {"tool": "schedule_run", "args": {"name": "daily", "wait": True}},
        {"tool": "tick"},
        {"tool": "trigger", "args": {"prompt": "[]"}, "no_token": True},
    ]
    async with serve(extra=SCHEDULE) as butler:
        result, seen = await run_agent(butler, steps)
        children = await eventually(
            lambda: finished_children(butler, result["session_id"], 3), timeout=120
        )
        rows = await butler.butler.sessions.list()
    for answer in seen[:2]:
        assert "queued: every session slot is busy" in answer["text"], answer
        assert answer["seconds"] < 10  # at once, not a wait for its own slot
    assert "every session slot is busy" in json.loads(seen[2]["text"])["queued"]
    assert json.loads(seen[3]["text"]) == {"fired": []}  # nothing was due
    assert seen[4]["ok"] is False  # no token, no tool (the 401 itself: test_http.py)
    # Each ran once the slot was free, a child of the session that asked, forged or not.
    assert {row["trigger_source"] for row in children} == {"trigger"}
    assert len(rows) == 4  # nothing else ever started
    assert sorted(row["metadata"].get("schedule", "") for row in children) == ["", "", "daily"]


async def finished_children(butler: InProcessButler, parent: str, count: int) -> list | None:
    rows = await butler.butler.sessions.list()
    children = [row for row in rows if row["parent_session_id"] == parent]
    done = len(children) == count and all(row["status"] == "succeeded" for row in children)
    return children if done else None


async def test_session_start_from_a_session_is_its_child_and_counts_against_the_limits(serve):
    steps = [{"tool": "session_start", "args": {"prompt": "[]"}}]
    async with serve(
        runtime=agent_runtime(max_concurrent_sessions=1, max_queued_sessions=0)
    ) as butler:
        _, seen = await run_agent(butler, steps)
    assert seen[0]["ok"] is False and "queue full" in seen[0]["text"]
    async with serve(runtime=agent_runtime(max_concurrent_sessions=1)) as butler:
        result, seen = await run_agent(butler, steps)
        child_id = json.loads(seen[0]["text"])["session_id"]
        await eventually(lambda: finished_children(butler, result["session_id"], 1))
        child = await butler.butler.sessions.get(child_id)
    assert child["parent_session_id"] == result["session_id"]
    assert child["trigger_source"] == "trigger"  # never "external"
    assert child["root_id"] == result["session_id"] and child["chain_depth"] == 1


async def test_a_forged_session_id_does_not_move_a_tool_call(butler):
    victim = str(uuid.uuid4())
    butler.butler.spawner.ledger.open(victim)  # a session the runtime would like to frame
    forged = {"headers": {"X-Butler-Session": victim}, "query": f"?session={victim}"}
    steps = [{"tool": "state_set", "args": {"key": "k", "value": 1}, **forged}]
    result, seen = await run_agent(butler, steps)
    assert seen[0]["ok"] is True
    assert butler.butler.spawner.ledger.close(victim) == []
    calls = [(c["name"], c["source"]) for c in result["tool_calls"]]
    assert calls == [("state_set", "server")]  # recorded where its token says


async def test_a_session_token_is_dead_once_its_session_ended(butler, tmp_path: Path):
    saved = tmp_path / "server.json"
    _, seen = await run_agent(butler, [{"save": str(saved)}, {"tool": "status"}])
    assert seen[0]["ok"] is True  # the token worked while the session ran
    server = json.loads(saved.read_text())
    async with httpx2.AsyncClient(timeout=10) as client:
        for method, path in (("POST", "/mcp"), ("GET", "/sse")):
            answer = await client.request(method, f"{butler.url}{path}", headers=server["headers"])
            assert answer.status_code == 401, path


async def test_a_tools_list_narrows_what_a_session_sees_and_calls(serve):
    runtime = agent_runtime(tools=["state_get", "status"])
    steps = [{"tool": "list"}, {"tool": "state_set", "args": {"key": "k", "value": 1}}]
    async with serve(runtime=runtime) as butler:
        _, seen = await run_agent(butler, steps)
        async with butler_client(f"{butler.url}/mcp") as owner:
            owners = {tool.name for tool in await owner.list_tools()}
    assert json.loads(seen[0]["text"]) == ["state_get", "status"]
    assert seen[1]["ok"] is False
    assert "'state_set'" in seen[1]["text"] and "[butler.runtime] tools" in seen[1]["text"]
    assert "state_set" in owners  # the owner is not narrowed
