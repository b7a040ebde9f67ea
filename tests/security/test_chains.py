"""Chains: sessions starting sessions stop at their depth and at their total, and queue.

Real sessions of the ``command`` runtime (tests/security/agent.py), each
running the steps its prompt holds: a step starts the next generation with
the steps of the one after, as a runtime gone wrong would start a copy of
itself forever.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.builders import conftest as builder_fixtures
from tests.helpers import InProcessButler, butler_client, eventually
from tests.security.conftest import agent_runtime

pytestmark = pytest.mark.slow  # a real server, and runtimes as processes

ENDED = ("succeeded", "failed", "cancelled")
repo, tmux_socket = builder_fixtures.repo, builder_fixtures.tmux_socket


def generations(count: int, tool: str = "session_start") -> list[dict[str, Any]]:
    """Steps that start a session running these steps again, ``count`` levels down."""
    steps: list[dict[str, Any]] = []
    for _ in range(count):
        steps = [{"tool": tool, "args": {"prompt": json.dumps(steps)}}]
    return steps


async def trigger(butler: InProcessButler, steps: list[dict[str, Any]]) -> dict[str, Any]:
    """The owner triggers a session running ``steps``; its result."""
    async with butler_client(f"{butler.url}/mcp", timeout=120) as owner:
        answer = await owner.call_tool("trigger", {"prompt": json.dumps(steps), "timeout_s": 60})
    assert answer.structured_content["success"], answer.structured_content
    return answer.structured_content


async def settled(butler: InProcessButler, count: int) -> list[dict[str, Any]]:
    """The butler's rows once ``count`` sessions exist and all ended, oldest first."""

    async def done() -> list[dict[str, Any]] | None:
        rows = await butler.butler.sessions.list(limit=100)
        ended = len(rows) == count and all(row["status"] in ENDED for row in rows)
        return sorted(rows, key=lambda row: row["created_at"]) if ended else None

    return await eventually(done, timeout=120)


async def test_a_session_starting_copies_of_itself_stops_at_the_chain_depth(serve):
    runtime = agent_runtime(max_concurrent_sessions=1, max_chain_depth=2)
    async with serve(runtime=runtime) as butler:
        root = await trigger(butler, generations(6))
        rows = await settled(butler, 3)  # the root, then depths 1 and 2; no third generation
    root_id = root["session_id"]
    assert [row["chain_depth"] for row in rows] == [0, 1, 2]
    assert [row["root_id"] for row in rows] == [None, root_id, root_id]
    assert rows[1]["parent_session_id"] == root_id
    assert rows[2]["parent_session_id"] == rows[1]["id"]
    # Every generation queued behind its parent's one slot instead of being refused.
    assert all(row["status"] == "succeeded" for row in rows)
    last = rows[2]
    refusal = last["metadata"]["chain_refused"]
    assert refusal.startswith("chain too deep: this session is 2 sessions from its root")
    assert "[butler.runtime] max_chain_depth = 2" in refusal and "\n" not in refusal
    first = json.loads(last["output"])[0]
    assert first["ok"] is False and first["text"] == refusal  # what the runtime was told


async def test_one_root_trigger_brings_about_at_most_max_chain_sessions(serve):
    runtime = agent_runtime(max_concurrent_sessions=2, max_chain_sessions=3)
    fan_out = [{"tool": "session_start", "args": {"prompt": "[]"}}] * 5
    async with serve(runtime=runtime) as butler:
        root = await trigger(butler, fan_out)
        rows = await settled(butler, 4)  # the root and three children
    answers = json.loads(root["output"])
    assert [answer["ok"] for answer in answers] == [True, True, True, False, False]
    refusal = answers[3]["text"]
    assert refusal.startswith(
        f"chain too long: 3 sessions descend from root trigger {rows[0]['id']}"
    )
    assert "[butler.runtime] max_chain_sessions = 3" in refusal
    assert rows[0]["metadata"]["chain_refused"] == refusal  # on the asking session's row
    assert all(row["root_id"] == rows[0]["id"] for row in rows[1:])


async def test_a_session_waiting_on_its_own_slot_is_answered_at_once_and_its_child_runs(serve):
    runtime = agent_runtime(max_concurrent_sessions=1)
    async with serve(runtime=runtime) as butler:
        root = await trigger(butler, generations(1, tool="trigger"))
        rows = await settled(butler, 2)
    answer = json.loads(json.loads(root["output"])[0]["text"])
    assert answer["success"] is False and answer["session_id"] == rows[1]["id"]
    assert answer["error"].startswith("queued: every session slot is busy")
    assert rows[1]["status"] == "succeeded" and rows[1]["parent_session_id"] == rows[0]["id"]


async def test_an_interactive_builder_and_what_it_starts_count_in_the_sessions_chain(
    serve, repo, tmux_socket
):
    """Before, a session's interactive builder began a chain of its own (depth 0), so
    session -> builder -> session -> builder ... passed every bound."""
    # The builder's terminal runs the same scripted agent: its task is its steps.
    runtime = agent_runtime(max_chain_depth=1)
    runtime["interactive_command"] = runtime["command"]
    builder_steps = [{"tool": "session_start", "args": {"prompt": "[]"}}]
    spawn = {"repo": str(repo), "task": json.dumps(builder_steps)}
    extra = f'[butler.builders]\nrepos = ["{repo}"]\n'
    async with serve(runtime=runtime, extra=extra) as butler:
        root = await trigger(butler, [{"tool": "builder_spawn", "args": spawn}])
        assert json.loads(root["output"])[0]["ok"], root["output"]

        async def answered() -> list[dict[str, Any]] | None:
            """The rows once the builder's call was refused or its session started."""
            rows = await butler.butler.sessions.list(limit=100)
            refused = any("chain_refused" in row["metadata"] for row in rows)
            return rows if refused or len(rows) > 2 else None

        rows = await eventually(answered, timeout=60)
    assert len(rows) == 2  # the root and its builder; the builder's session never started
    (builder,) = [row for row in rows if row["id"] != root["session_id"]]
    assert builder["parent_session_id"] == root["session_id"]
    assert (builder["root_id"], builder["chain_depth"]) == (root["session_id"], 1)
    refusal = builder["metadata"]["chain_refused"]
    assert refusal.startswith("chain too deep: this session is 1 sessions from its root")
    assert "[butler.runtime] max_chain_depth = 1" in refusal
