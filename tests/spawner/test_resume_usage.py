"""A resumed session records its own usage when the runtime reports the thread's total."""

from __future__ import annotations

import pytest

from butler.runtimes.base import Invocation, RuntimeResult, Usage
from butler.spawner.spawner import TriggerRequest
from tests.fakes.runtime import FakeAdapter

pytestmark = pytest.mark.slow


class TotallingAdapter(FakeAdapter):
    """Like Codex (tokens) and Claude (cost): every run reports the thread's running total."""

    cumulative_on_resume = frozenset(
        {"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost_usd"}
    )


async def test_each_resume_records_only_what_it_added(make_spawner):
    requests = 0

    async def one_more_request(invocation: Invocation) -> RuntimeResult:
        nonlocal requests
        requests += 1  # each session makes one 10/5 request costing 0.01
        total = Usage(10 * requests, 5 * requests, 2 * requests, 0)
        return RuntimeResult("ok", usage=total, cost_usd=0.01 * requests, runtime_session_id="t")

    spawner = make_spawner(TotallingAdapter(script=one_more_request))
    first = await spawner.trigger(TriggerRequest("start"))
    second = await spawner.trigger(TriggerRequest("go on", resume_session_id=first.session_id))
    third = await spawner.trigger(TriggerRequest("more", resume_session_id=second.session_id))
    for result in (first, second, third):
        assert result.usage["input_tokens"] == 10 and result.usage["output_tokens"] == 5
        row = await spawner.sessions.get(result.session_id)
        assert (row["input_tokens"], row["output_tokens"], row["cache_read_tokens"]) == (10, 5, 2)
        assert row["cost_usd"] == pytest.approx(0.01)
    row = await spawner.sessions.get(third.session_id)
    assert row["metadata"]["runtime_totals"]["input_tokens"] == 30  # the raw total is kept
