"""The Codex adapter driving the genuine, pinned Codex CLI against the fake model, unjailed.

What only the real CLI shows: whether its first model request waits for the
butler's tool list, and where a resumed session's transcript is written.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from butler.config import RuntimeConfig
from butler.runtimes.base import Invocation, McpEndpoint
from butler.runtimes.codex import CodexAdapter
from tests.conformance.runtimes import CASES, FAKE_KEY
from tests.fakes.mcp_probe import McpProbe
from tests.fakes.model_server import FakeModelServer, Text, ToolCall
from tests.fakes.runtime import sample_invocation
from tests.helpers import SETUP

pytestmark = pytest.mark.e2e

CODEX = CASES["codex"]


@pytest.fixture
def adapter() -> CodexAdapter:
    missing = CODEX.recipe.missing_reason()
    if missing:
        pytest.fail(f"{missing} (or run {SETUP})", False)
    return CodexAdapter(RuntimeConfig(type="codex", cli_path=str(CODEX.binary)))


def invocation(tmp_path: Path, model_url: str, mcp: McpEndpoint, home: Path) -> Invocation:
    """A run of Codex as the spawner builds one, on the fake model, without a jail."""
    workdir = tmp_path / f"work-{home.name}"
    workdir.mkdir()
    return sample_invocation(
        tmp_path,
        workdir=workdir,
        home=home,
        mcp=mcp,
        model=CODEX.model,
        args=tuple(CODEX.args(model_url)),
        env={"PATH": "/usr/local/bin:/usr/bin:/bin", "FAKE_MODEL_KEY": FAKE_KEY},
        timeout_s=90,
    )


async def test_the_first_model_request_waits_for_a_late_tool_list(
    adapter: CodexAdapter, fake_model: FakeModelServer, tmp_path: Path
) -> None:
    # A daemon just started answers its first tools/list late (seconds, at a high load).
    with McpProbe("late", first_list_delay_s=3) as late:
        fake_model.script = [ToolCall("state_set", {"key": "k", "value": "v"}), Text("Set.")]
        mcp = McpEndpoint("late", late.url, {})
        result = await adapter.invoke(invocation(tmp_path, fake_model.url, mcp, tmp_path / "h"))
    assert late.calls == [("k", "v")], result.output
    assert result.output == "Set."


def rollouts(home: Path) -> dict[str, str]:
    """The transcripts of a Codex home, by file name."""
    return {p.name: p.read_text() for p in (home / ".codex" / "sessions").rglob("rollout-*")}


async def test_an_unjailed_resume_continues_in_its_own_home_not_its_parents(
    adapter: CodexAdapter, fake_model: FakeModelServer, tmp_path: Path, mcp_probe: McpProbe
) -> None:
    mcp = McpEndpoint("probe", mcp_probe.url, {})
    parent_home, home = tmp_path / "parent", tmp_path / "resumed"
    fake_model.script = [Text("Noted.")]
    first = await adapter.invoke(invocation(tmp_path, fake_model.url, mcp, parent_home))
    before = rollouts(parent_home)
    shutil.copytree(parent_home, home, symlinks=True)  # as the spawner seeds a resumed home
    fake_model.script = [Text("The word was PAPAYA.")]
    resumed = invocation(tmp_path, fake_model.url, mcp, home)
    resumed = Invocation(**{**resumed.__dict__, "resume": first.runtime_session_id})
    second = await adapter.invoke(resumed)
    assert second.output == "The word was PAPAYA."
    assert "PAPAYA" not in json.dumps(before)
    assert rollouts(parent_home) == before, "the parent's transcript was written to"
    [own] = rollouts(home).values()
    assert "The word was PAPAYA." in own
