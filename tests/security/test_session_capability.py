"""A runtime holds only its session's token: attributed by it, limited by it, dead after it."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.helpers import InProcessButler, butler_client
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


async def test_a_session_triggering_its_butler_is_refused_at_once_whatever_it_sends(serve):
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
        rows = await butler.butler.sessions.list()
    for answer in seen[:4]:
        assert "self-trigger refused" in answer["text"], answer
        assert answer["seconds"] < 10  # at once, not a wait for its own slot
    assert seen[4]["ok"] is False  # no token, no tool (the 401 itself: test_http.py)
    assert [row["id"] for row in rows] == [result["session_id"]]  # nothing else ever started


async def test_session_start_from_a_session_is_its_child_and_counts_against_the_limits(serve):
    steps = [{"tool": "session_start", "args": {"prompt": "[]"}}]
    async with serve(runtime=agent_runtime(max_concurrent_sessions=1)) as butler:
        _, seen = await run_agent(butler, steps)
    assert seen[0]["ok"] is False and "self-trigger refused" in seen[0]["text"]
    async with serve(runtime=agent_runtime(max_concurrent_sessions=2)) as butler:
        result, seen = await run_agent(butler, steps)
        child_id = json.loads(seen[0]["text"])["session_id"]
        await butler.butler.spawner.drain(30)
        child = await butler.butler.sessions.get(child_id)
    assert child["parent_session_id"] == result["session_id"]
    assert child["trigger_source"] == "trigger"  # never "external"


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
