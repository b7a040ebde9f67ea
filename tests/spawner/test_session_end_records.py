"""What a session's end leaves: the model the runtime reported, and its home only if resumable."""

from __future__ import annotations

import pytest

from butler.paths import butler_dir
from butler.runtimes.base import Invocation, RuntimeFailure, RuntimeResult
from butler.spawner.spawner import TriggerRequest
from tests.fakes.runtime import FakeAdapter

pytestmark = pytest.mark.slow


async def reports_a_model(invocation: Invocation) -> RuntimeResult:
    return RuntimeResult("ok", runtime_session_id="r", model="reported-model-7")


async def test_the_model_the_runtime_reports_is_recorded_when_none_is_configured(make_spawner):
    spawner = make_spawner(FakeAdapter(script=reports_a_model))
    result = await spawner.trigger(TriggerRequest("hi"))
    row = await spawner.sessions.get(result.session_id)
    assert result.success and row["model"] == "reported-model-7"


async def test_a_configured_model_is_not_replaced_by_what_the_runtime_says(make_spawner):
    spawner = make_spawner(FakeAdapter(script=reports_a_model), runtime={"model": "configured"})
    result = await spawner.trigger(TriggerRequest("hi"))
    row = await spawner.sessions.get(result.session_id)
    assert row["model"] == "configured"


class OneShot(FakeAdapter):
    """A runtime that cannot resume (like the ``command`` runtime)."""

    supports_resume = False


def homes(spawner) -> set[str]:
    folder = butler_dir(spawner.config) / "homes"
    return {home.name for home in folder.iterdir()} if folder.is_dir() else set()


@pytest.mark.parametrize("fails", [False, True])
async def test_the_home_of_a_runtime_that_cannot_resume_is_removed_at_the_end(
    make_spawner, fails: bool
):
    seen: list[bool] = []

    async def run(invocation: Invocation) -> RuntimeResult:
        (invocation.home / "state.txt").write_text("written by the runtime")
        seen.append(invocation.home.is_dir())
        if fails:
            raise RuntimeFailure("it broke")
        return RuntimeResult("ok")

    spawner = make_spawner(OneShot(script=run))
    result = await spawner.trigger(TriggerRequest("hi"))
    assert result.success is not fails and seen == [True]
    assert result.session_id not in homes(spawner)


async def test_the_home_of_a_resumable_runtime_is_kept(make_spawner):
    spawner = make_spawner(FakeAdapter(script=reports_a_model))
    result = await spawner.trigger(TriggerRequest("hi"))
    assert result.session_id in homes(spawner)
