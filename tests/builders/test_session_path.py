"""A builder is a session of the one session path: traced, and counted under its runtime.

In process, so the test reads the spans and metrics the daemon records: the
butler's own runtime is the in-process fake, the builder picks another
(``--runtime command``, the interactive test agent) from
``[butler.builders.runtimes.command]``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from butler.builders.manager import BuilderManager
from butler.builders.modes import SpawnOptions
from butler.builders.tmux import Tmux
from tests.builders.conftest import COMMAND_RUNTIME
from tests.fakes.runtime import FakeAdapter
from tests.helpers import eventually

pytestmark = pytest.mark.slow

COMMAND_BUILDERS = "\n[butler.builders.runtimes.command]\n" + "".join(
    f"{key} = {json.dumps(value)}\n" for key, value in COMMAND_RUNTIME.items() if key != "type"
)


def sessions_counted(reader, runtime: str, status: str) -> int:
    """How many sessions of butler ``tester`` the metrics count under ``runtime``, ``status``."""
    data = reader.get_metrics_data()
    total = 0
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name != "butler.sessions":
                    continue
                for point in metric.data.data_points:
                    labels = dict(point.attributes)
                    wanted = {"butler": "tester", "runtime": runtime, "status": status}
                    if all(labels.get(k) == v for k, v in wanted.items()):
                        total += point.value
    return total


@pytest.fixture
async def manager(make_spawner, tmux_socket: str):
    spawner = make_spawner(FakeAdapter(), extra=COMMAND_BUILDERS)
    builders = BuilderManager(spawner.config, spawner, spawner.sessions, Tmux(tmux_socket))
    yield builders
    await builders.stop()


async def test_a_builder_on_another_runtime_is_traced_and_counted_under_that_runtime(
    manager: BuilderManager, repo: Path, span_exporter, metric_reader
):
    before = {rt: sessions_counted(metric_reader, rt, "cancelled") for rt in ("command", "fake")}
    builder = await manager.spawn(SpawnOptions(text="Fix bug", runtime="command"), repo)
    row = await manager.sessions.get(builder["session_id"])
    assert row["runtime"] == "command"
    assert row["trace_id"], "a builder's row carries the trace id of its session span"
    span = next(
        s
        for s in span_exporter.get_finished_spans()
        if s.name == "butler.session" and s.attributes["butler.session_id"] == row["id"]
    )
    assert format(span.context.trace_id, "032x") == row["trace_id"]
    assert span.attributes["butler.runtime"] == "command"

    await eventually(lambda: manager.tmux.pane_pid(builder["tmux_session"]))
    await manager.stop_builder(builder["id"])
    assert (await manager.sessions.get(row["id"]))["status"] == "cancelled"
    after = {rt: sessions_counted(metric_reader, rt, "cancelled") for rt in ("command", "fake")}
    assert after == {"command": before["command"] + 1, "fake": before["fake"]}
