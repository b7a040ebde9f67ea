"""Conformance: every runtime, GENUINE CLI, through a real jailed daemon, against the fake model.

Each case is run for claude-code, codex, gemini, opencode and copilot (the
``conformance`` fixture is parametrized over them and starts one jailed
``butler run`` daemon per runtime, shared by the suite's modules). A trigger
goes in through the butler's MCP server exactly as a user's client sends it;
what is asserted is what that user would see: the answer, the session
record, the butler's state, the processes left behind, the connections
attempted.
"""

from __future__ import annotations

import ipaddress
import json
import re
import shutil
import time
import uuid
from pathlib import Path

import psutil
import pytest

from tests.conformance.calls import (
    SESSION_TIMEOUT_S,
    call,
    model_requests,
    session,
    state_get,
    trigger,
)
from tests.conformance.conftest import Conformance
from tests.fakes.model_server import FakeModelServer, Garbage, Hang, ModelError, Text, ToolCall
from tests.helpers import eventually

pytestmark = pytest.mark.e2e

HANG_TIMEOUT_S = 8.0
SYSTEM_PROMPT = "You are a test butler"


def processes_using(home: Path) -> list[str]:
    """Processes whose environment points into ``home``: a session's leftovers."""
    found = []
    for proc in psutil.process_iter(["pid", "name"]):
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
            environ = proc.environ()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        if any(value.startswith(str(home)) for value in environ.values()):
            found.append(f"{proc.info['pid']} {proc.info['name']}")
    return found


async def test_success_records_output_usage_and_the_runtime_session(
    conformance: Conformance, fake_model: FakeModelServer
) -> None:
    fake_model.script = [Text("All good here.")]
    result = await trigger(conformance, "Say something")
    assert result["success"] is True, result["error"]
    assert result["output"] == "All good here."
    row = await session(conformance, result["session_id"])
    assert row["status"] == "succeeded" and row["runtime"] == conformance.case.type
    assert row["runtime_session_id"], "the runtime's own session id is recorded"
    # Every one of these CLIs reports token counts; the fake model reports non-zero ones.
    assert row["input_tokens"] > 0 and row["output_tokens"] > 0, row
    # The butler's system prompt (CLAUDE.md) reached the model, and so did its model setting.
    assert SYSTEM_PROMPT in json.dumps(model_requests(fake_model)[0])
    model = conformance.case.model
    if model:
        sent = json.dumps([(r.path, r.body) for r in fake_model.requests])
        assert model.rsplit("/", 1)[-1] in sent
    else:  # none configured: the row says the model the CLI reports it used
        assert row["model"] and row["model"] in json.dumps(model_requests(fake_model)), row


async def test_the_butlers_own_tool_is_called_and_recorded(
    conformance: Conformance, fake_model: FakeModelServer
) -> None:
    value = f"{conformance.name}-{uuid.uuid4().hex[:6]}"
    call_it = ToolCall("state_set", {"key": "conformance", "value": value})
    fake_model.script = [call_it, Text("Set.")]
    result = await trigger(conformance, "Store the value")
    assert result["success"] is True, result["error"]
    assert result["output"] == "Set."
    assert await state_get(conformance, "conformance") == value
    row = await session(conformance, result["session_id"])
    calls = [(c["name"], c["arguments"]) for c in row["tool_calls"]]
    assert calls == [("state_set", {"key": "conformance", "value": value})]


async def test_a_model_error_fails_the_session_with_the_runtimes_message(
    conformance: Conformance, fake_model: FakeModelServer
) -> None:
    fake_model.script = [ModelError(400, "conformance boom 7731")]
    result = await trigger(conformance, "Fail please")
    assert result["success"] is False
    assert "conformance boom 7731" in result["error"]
    row = await session(conformance, result["session_id"])
    assert row["status"] == "failed" and "conformance boom 7731" in row["error"]
    # No model answered: the row names none but one the model API was asked for.
    assert not row["model"] or row["model"] in json.dumps(fake_model.requests), row["model"]


async def test_a_hanging_model_times_out_and_leaves_no_process(
    conformance: Conformance, fake_model: FakeModelServer
) -> None:
    fake_model.script = [Hang()]
    started = time.monotonic()
    result = await trigger(conformance, "Wait forever", timeout_s=HANG_TIMEOUT_S)
    assert result["success"] is False and "timeout" in result["error"], result["error"]
    assert time.monotonic() - started < HANG_TIMEOUT_S + 8, "ended near its time limit"
    row = await session(conformance, result["session_id"])
    assert row["status"] == "failed"
    home = conformance.session_home(result["session_id"])
    assert home.is_dir()
    await eventually(lambda: not processes_using(home), timeout=10)


async def test_garbage_from_the_model_is_a_clear_failure(
    conformance: Conformance, fake_model: FakeModelServer
) -> None:
    fake_model.script = [Garbage()]
    result = await trigger(conformance, "Answer badly", timeout_s=60)
    assert result["success"] is False
    error = result["error"]
    # A failure the runtime explained, not a time limit nor an empty answer taken for success.
    assert error and "timeout" not in error, error
    assert "\n" not in error and len(error) < 2000


async def test_resume_continues_the_same_runtime_session(
    conformance: Conformance, fake_model: FakeModelServer
) -> None:
    fake_model.script = [Text("Noted.")]
    first = await trigger(conformance, "Remember the word PAPAYA")
    assert first["success"] is True, first["error"]
    fake_model.script = [Text("The word was PAPAYA.")]
    fake_model.requests.clear()
    second = await call(
        conformance.url,
        "session_resume",
        session_id=first["session_id"],
        prompt="Which word?",
        timeout_s=SESSION_TIMEOUT_S,
    )
    assert second["success"] is True, second["error"]
    assert second["output"] == "The word was PAPAYA."
    before = await session(conformance, first["session_id"])
    after = await session(conformance, second["session_id"])
    assert after["parent_session_id"] == first["session_id"]
    assert after["runtime_session_id"] == before["runtime_session_id"]
    # Each row counts its own session's tokens (one answer each), never the conversation's.
    tokens = ("input_tokens", "output_tokens")
    assert [after[k] for k in tokens] == [before[k] for k in tokens], (before, after)
    # The runtime sent the earlier conversation along: it really continued.
    last = json.dumps(model_requests(fake_model)[-1])
    assert "PAPAYA" in last and "Which word?" in last


async def test_resuming_a_lost_runtime_session_fails_clearly(
    conformance: Conformance, fake_model: FakeModelServer
) -> None:
    fake_model.script = [Text("Noted.")]
    first = await trigger(conformance, "Start something")
    assert first["success"] is True, first["error"]
    # The runtime's state of that session is gone (a wiped disk, a pruned home).
    shutil.rmtree(conformance.session_home(first["session_id"]))
    second = await call(
        conformance.url, "session_resume", session_id=first["session_id"], prompt="Go on"
    )
    assert second["success"] is False, "a lost session must not silently start afresh"
    assert second["error"] and "timeout" not in second["error"]


async def test_a_decoy_mcp_server_in_user_and_project_config_is_never_connected(
    conformance: Conformance, fake_model: FakeModelServer
) -> None:
    case, folder, decoy = conformance.case, conformance.folder, conformance.decoy
    decoy.calls.clear()
    planted = case.plant_decoys(conformance.home_seed, folder, decoy.url)
    try:
        fake_model.script = [ToolCall("state_set", {"key": "locked", "value": "no"}), Text("Ok.")]
        result = await trigger(conformance, "Store it")
        assert result["success"] is True, result["error"]
        assert await state_get(conformance, "locked") == "no"
    finally:
        for path in planted:
            path.unlink(missing_ok=True)
        for relative, text in case.files.items():
            (folder / relative).write_text(text, encoding="utf-8")
    assert decoy.calls == []
    offered = json.dumps(model_requests(fake_model))
    assert "decoy" not in offered, "decoy tools were offered to the model"


#: ``connect(3, {sa_family=AF_INET, sin_port=htons(80), sin_addr=inet_addr("1.2.3.4")}, 16)``
INET_CONNECT = re.compile(r'sa_family=AF_INET6?,.*?(?:inet_addr\(|inet_pton\(AF_INET6, ?)"([^"]+)"')


def connect_targets(logs: Path) -> list[str]:
    """Every IPv4/IPv6 address a traced run tried to connect to."""
    targets = []
    for log in logs.glob("connect.*.log"):
        targets += INET_CONNECT.findall(log.read_text(encoding="utf-8", errors="replace"))
    return targets


def is_loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or bool(mapped and mapped.is_loopback)


async def test_no_outbound_network_connection_is_attempted(
    conformance: Conformance, fake_model: FakeModelServer
) -> None:
    logs = conformance.connect_logs
    for old in logs.glob("connect.*.log"):
        old.unlink()
    fake_model.script = [ToolCall("state_set", {"key": "net", "value": "1"}), Text("Done.")]
    result = await trigger(conformance, "Store it")
    assert result["success"] is True, result["error"]
    targets = connect_targets(logs)
    assert any(is_loopback(t) for t in targets), "the trace saw the run's own connections"
    outbound = sorted({t for t in targets if not is_loopback(t)})
    assert outbound == [], f"{conformance.name} tried to reach {outbound}"


#: Runtimes whose own retries of a failing model API end inside the time limit: Claude
#: Code, Gemini and Codex because the butler caps them through their settings; Copilot by
#: itself (5 retries, about 15 s, fixed in its native runtime with no setting to change).
RETRIES_BOUNDED = {"claude-code", "gemini", "codex", "copilot"}
#: Why the others are skipped: what they do and the setting that is missing.
RETRIES_UNCAPPED = {
    "opencode": (
        "OpenCode retries a model 5xx 5 times, 2 to 32 s apart (about 70 s), and no "
        "config key, variable or flag changes that: the count is a constant "
        "(SessionRetry.RETRY_MAX_RETRIES = 5) and 'run --format json' prints no retry event"
    ),
}
#: Runtimes that show their own words for an HTTP 500, never the server's text.
HIDE_500_TEXT = {"codex": "HTTP 500 from the model API"}


async def test_a_model_5xx_fails_inside_the_time_limit_with_the_servers_text(
    conformance: Conformance, fake_model: FakeModelServer
) -> None:
    if conformance.name not in RETRIES_BOUNDED:
        pytest.skip(f"{conformance.name}: {RETRIES_UNCAPPED[conformance.name]}")
    fake_model.script = [ModelError(500, "conformance overload 5512")]
    started = time.monotonic()
    result = await trigger(conformance, "Fail please", timeout_s=120)
    assert result["success"] is False
    assert HIDE_500_TEXT.get(conformance.name, "conformance overload 5512") in result["error"]
    assert "timeout" not in result["error"]
    assert time.monotonic() - started < 60
    if conformance.name in HIDE_500_TEXT:  # any other 5xx keeps the server's text
        fake_model.script = [ModelError(503, "conformance unavailable 5513")]
        result = await trigger(conformance, "Fail please", timeout_s=120)
        assert "conformance unavailable 5513" in result["error"], result["error"]
