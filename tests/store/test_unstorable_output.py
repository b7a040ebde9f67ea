"""Output the database cannot hold as given still ends in a true, complete record."""

from __future__ import annotations

import re
import sys

import pytest

from butler.config import RuntimeConfig
from butler.runtimes.registry import get_adapter
from butler.spawner.spawner import TriggerRequest
from butler.store.text import DEFAULT_MAX_TEXT_BYTES


@pytest.fixture
def command_runtime(make_spawner):
    def build(command: list[str]):
        runtime = {"type": "command", "command": command}
        return make_spawner(get_adapter("command", RuntimeConfig(**runtime)), runtime=runtime)

    return build


async def test_nul_in_stdout_is_recorded_flagged_and_frees_its_dedupe_key(command_runtime):
    spawner = command_runtime(["printf", "a\\000b"])
    request = TriggerRequest("say it", metadata={"dedupe_key": "daily"})
    result = await spawner.trigger(request)
    assert result.success, result.error
    assert result.output == "a\x00b"  # the caller gets what the runtime said
    row = await spawner.sessions.get(result.session_id)
    assert row["status"] == "succeeded" and row["output"] == "a\ufffdb"
    assert row["metadata"]["sanitised"] == ["output"]
    assert await spawner.sessions.find_active("daily") is None


async def test_binary_stdout_is_recorded(command_runtime):
    spawner = command_runtime(
        [sys.executable, "-c", "import sys; sys.stdout.buffer.write(bytes(range(256)) * 4)"]
    )
    result = await spawner.trigger(TriggerRequest("dump"))
    assert result.success, result.error
    row = await spawner.sessions.get(result.session_id)
    assert row["status"] == "succeeded" and "\x00" not in row["output"]
    assert "\ufffd" in row["output"] and "ABC" in row["output"]
    assert row["metadata"]["sanitised"] == ["output"]


async def test_nul_in_stderr_of_a_failed_exit_is_recorded_as_the_error(command_runtime):
    spawner = command_runtime(["sh", "-c", "printf 'error: bad\\000news' >&2; exit 3"])
    result = await spawner.trigger(TriggerRequest("fail"))
    assert result.success is False and "bad\x00news" in result.error
    row = await spawner.sessions.get(result.session_id)
    assert row["status"] == "failed"
    assert row["error"] == "command exited with status 3: error: bad\ufffdnews"
    assert row["metadata"]["sanitised"] == ["error"]


async def test_a_17_mb_line_is_cut_not_a_crash_and_caller_and_row_get_the_cap(command_runtime):
    spawner = command_runtime(
        [
            sys.executable,
            "-c",
            "import sys; sys.stdout.write('x' * (17 * 1024 * 1024) + '\\nend\\n')",
        ]
    )
    result = await spawner.trigger(TriggerRequest("flood"))
    assert result.success, result.error
    # The caller gets the first MiB and a marker, not 17 MB held in memory.
    marker = f"bytes cut at the {DEFAULT_MAX_TEXT_BYTES}-byte limit]"
    assert result.output.startswith("xxx") and result.output.endswith(marker)
    assert DEFAULT_MAX_TEXT_BYTES - 100 < len(result.output) <= DEFAULT_MAX_TEXT_BYTES
    row = await spawner.sessions.get(result.session_id)
    assert row["status"] == "succeeded" and row["output"] == result.output


async def test_nul_and_nan_in_what_a_session_is_created_with_are_stored_flagged(make_spawner):
    spawner = make_spawner()
    request = TriggerRequest(
        "hello\x00world",
        context="ctx\x00",
        metadata={"dedupe_key": "k\x00", "score": float("nan"), "bad\ud800": "x"},
    )
    session_id, task = await spawner.start(request)
    result = await task
    assert result.success, result.error
    row = await spawner.sessions.get(session_id)
    assert row["prompt"] == "ctx\ufffd\n\nhello\ufffdworld"
    meta = row["metadata"]
    assert meta["dedupe_key"] == "k\ufffd" and meta["score"] is None and meta["bad\ufffd"] == "x"
    assert meta["sanitised"] == ["prompt", "metadata", "output"]


async def test_100_mb_of_stdout_is_not_kept_whole(command_runtime):
    spawner = command_runtime(
        [sys.executable, "-c", "import sys\nfor _ in range(100 * 1024): print('y' * 1023)"]
    )
    result = await spawner.trigger(TriggerRequest("flood"))
    assert result.success, result.error
    assert len(result.output) <= DEFAULT_MAX_TEXT_BYTES
    marker = re.search(r"\[butler: (\d+) bytes cut at the 1048576-byte limit\]$", result.output)
    assert marker and abs(int(marker[1]) - (100 - 1) * 1024 * 1024) < 200
    row = await spawner.sessions.get(result.session_id)
    assert row["output"] == result.output and "truncated" not in row["metadata"]
