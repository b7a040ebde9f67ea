"""External runtimes: the shipped example adapter script driven through the spawner."""

from __future__ import annotations

import json

import pytest

from butler.config import load_config
from butler.errors import ConfigError
from butler.runtimes.registry import get_adapter
from butler.spawner.spawner import TriggerRequest
from tests.helpers import free_port, wait_until, write_butler

pytestmark = pytest.mark.slow

ENV = '\n[butler.env]\noptional = ["FILE_AGENT_DELAY"]\n'


@pytest.fixture
def external_spawner(make_spawner, adapter_roster):
    def build(environ=None):
        return make_spawner(
            get_adapter("file-agent", roster=adapter_roster),
            runtime={"type": "file-agent"},
            extra=ENV,
            environ=environ or {},
        )

    return build


def test_runtimes_file_registers_a_runtime_type(adapter_roster):
    folder = write_butler(adapter_roster, "ext", port=free_port(), runtime={"type": "file-agent"})
    assert load_config(folder).runtime.type == "file-agent"


def test_bad_runtimes_file_is_a_config_error(adapter_roster):
    (adapter_roster / "agent_runtime.json").write_text('{"runtimes": {"x": {"command": 3}}}')
    folder = write_butler(adapter_roster, "ext", port=free_port())
    with pytest.raises(ConfigError, match=r"runtimes\.x: expected an object with a 'command'"):
        load_config(folder)
    (adapter_roster / "agent_runtime.json").write_text(
        '{"runtimes": {"x": {"command": "../../bin/sh"}}}'
    )
    with pytest.raises(ConfigError, match="leaves the roster folder"):
        load_config(folder)


async def test_spawn_and_poll_to_completion(external_spawner):
    spawner = external_spawner()
    result = await spawner.trigger(TriggerRequest("Summarize the brief"))
    assert result.success, result.error
    assert result.output.startswith("read the brief: ") and result.output.endswith("prompt 1")
    row = await spawner.sessions.get(result.session_id)
    assert row["runtime"] == "file-agent" and row["runtime_session_id"].startswith("session_")


async def test_failed_status_is_a_failed_session(external_spawner):
    result = await external_spawner().trigger(TriggerRequest("please FAIL"))
    assert result.success is False and "reported the session failed" in result.error


async def test_resume_continues_the_same_external_session(external_spawner):
    spawner = external_spawner()
    first = await spawner.trigger(TriggerRequest("start"))
    second = await spawner.trigger(TriggerRequest("go on", resume_session_id=first.session_id))
    assert second.success, second.error
    assert second.output.endswith("prompt 2")  # the same session saw both prompts
    rows = [await spawner.sessions.get(r.session_id) for r in (first, second)]
    assert rows[0]["runtime_session_id"] == rows[1]["runtime_session_id"]
    assert rows[1]["parent_session_id"] == first.session_id


async def test_timeout_kills_the_detached_worker(external_spawner):
    spawner = external_spawner({"FILE_AGENT_DELAY": "60"})
    result = await spawner.trigger(TriggerRequest("slow", timeout_s=1.5))
    assert result.success is False and result.error == "timeout after 1.5 s"
    import psutil

    def no_sleeper_left() -> bool:
        # A SIGKILLed process can linger for a moment before it leaves the table.
        return not [
            p
            for p in psutil.process_iter(["cmdline", "status"])
            if (p.info["cmdline"] or [])[:2] == ["sleep", "60"] and p.info["status"] != "zombie"
        ]

    wait_until(no_sleeper_left, timeout=5)


def test_state_output_is_reported(tmp_path):
    from butler.runtimes.external import _result_from_state

    state = tmp_path / "state.json"
    state.write_text(json.dumps({"output": "done"}))
    assert _result_from_state(state, "s").output == "done"
    state.write_text("{broken")
    assert _result_from_state(state, "s").output == "{}"


#: An adapter that looks, while butler's spawn call runs, for the prompt in every argv.
ARGV_SPY = r"""#!/usr/bin/env bash
set -euo pipefail
case "$1" in
  spawn)
    # -f: the pattern comes from the file, so grep's own argv does not hold it either.
    hits=$(grep -lsaF -f "$4" /proc/[0-9]*/cmdline | wc -l || true)
    same=no; [ "${BUTLER_PROMPT_FILE:-}" = "$4" ] && same=yes
    printf '{"output": "hits=%s mode=%s env=%s text=%s"}' \
      "$hits" "$(stat -c %a -- "$4")" "$same" "$(head -c 40 -- "$4")" > "$3"
    echo spy_1 ;;
  check_status) echo completed ;;
esac
"""


async def test_the_prompt_is_in_a_private_file_and_in_no_argv(make_spawner, roster):
    spy = roster / "adapters" / "spy.sh"
    spy.parent.mkdir(parents=True, exist_ok=True)
    spy.write_text(ARGV_SPY)
    spy.chmod(0o755)
    (roster / "agent_runtime.json").write_text(
        json.dumps({"runtimes": {"spy": {"command": "adapters/spy.sh"}}})
    )
    spawner = make_spawner(get_adapter("spy", roster=roster), runtime={"type": "spy"})
    prompt = "the owner's private words 5e1f9c"
    result = await spawner.trigger(TriggerRequest(prompt))
    assert result.success, result.error
    # No process (butler's call included) had the prompt on its command line.
    assert result.output == f"hits=0 mode=600 env=yes text={prompt}"
